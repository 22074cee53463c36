"""The ``lap`` command line: main.py (Click commands), bench.py (``lap bench``), support.py (errors to
exit codes, Rich on stderr), gpu_start.py (the early CUDA start of the ``lap`` process only).
Importing this package imports nothing: the entry point starts the driver before NumPy loads."""
