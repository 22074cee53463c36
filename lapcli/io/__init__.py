"""Reading cost matrices and writing results, one module per job; import each name from the module
that defines it (this package re-exports nothing).

- :mod:`lapcli.io.formats`: the extensions of each kind of file, NPY's magic bytes, ``FILE.h5:/path``
- :mod:`lapcli.io.text`: CSV/TSV/text parsing
- :mod:`lapcli.io.text_layout`: the text's delimiter, header and index-column decisions, its fields
- :mod:`lapcli.io.read`: reading an input by its spec: NPY, HDF5, text or stdin
- :mod:`lapcli.io.write`: atomic outputs: matrices, assignments, duals and reports
"""
