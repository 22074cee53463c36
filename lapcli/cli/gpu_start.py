"""A one-shot ``lap solve`` on the GPU: start the CUDA driver while Python imports, and leave the
context's teardown to a child process after the answer is out.

Why (H100 machine, n = 4096, docs/dispatch.md): a cold ``lap solve m.npy -o a.npy`` spent ~0.6 s
beyond its kernel, and most of that was two fixed costs of CUDA that a single thread waits for
one after the other: ``cuInit`` plus the device's primary context (~0.22 s), then NumPy's import
and the file read (~0.2 s); and at exit ~0.14 s in the driver tearing the context down. So:

- ``start_early(argv)``, called by the ``lap`` entry point before NumPy is imported, starts the
  driver and retains the device's primary context in a thread, through ctypes (which releases the
  GIL during the calls), only when the command will probably run on the GPU: ``lap solve`` of one
  NPY file whose header shows a matrix ``auto`` gives to the kernel (or a stack), with an engine
  that may use CUDA. The launchers find the driver initialised and the context made; they call
  ``wait()`` first (the CuPy paths do not: the driver's initialisation is thread-safe).
- ``detach_teardown()``, called by the entry point after the command has finished and flushed its
  output, forks a child that only holds the process's open files (among them the driver's) until
  this process has exited, then exits: the driver releases the context in the child, after the
  command has returned. The child touches no CUDA API and closes stdin, stdout and stderr, so a
  pipeline does not wait for it. ``LAPCLI_DETACH_TEARDOWN=0`` turns this off.

A probe of both on the H100 machine (cold processes, a 4096² int32 NPY read and copied to the
device, five runs each): 696–825 ms one after the other, 406–476 ms with both (docs/dispatch.md).

Nothing here changes a result: if the early start fails or guesses wrong, the launchers initialise
the driver themselves as before. The library never forks: only the ``lap`` process does.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import threading

GPU_SOLVERS = ("auto", "cuda", "cuda-stepwise", "cuda-sap", "cuda-batch")
# `lap solve`'s options that take a value (a test checks this against the command's own list)
SOLVE_OPTIONS_WITH_VALUES = frozenset({"--solver", "--dtype", "--dataset", "-o", "--output", "--report", "--duals",
                                       "--cost-limit", "--device", "--timeout", "--scheduler", "--points", "--metric",
                                       "--p"})
_NPY_MAGIC = b"\x93NUMPY"
_SHAPE = re.compile(rb"'shape':\s*\(([\d,\s]*)\)")

_thread: threading.Thread | None = None
_context_made = False  # a CUDA context exists in this process (made here or by a launcher)
_ordinal = 0  # the device whose primary context was made


def npy_shape(path: str) -> tuple[int, ...] | None:
    """The shape in an NPY file's header (read without NumPy), or None if it is not one."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device would block the open
            return None
        with open(path, "rb") as file:
            head = file.read(16)
            if not head.startswith(_NPY_MAGIC) or len(head) < 10:
                return None
            size = int.from_bytes(head[8:10], "little") if head[6] == 1 else int.from_bytes(head[8:12], "little")
            start = 10 if head[6] == 1 else 12
            file.seek(start)
            header = file.read(min(size, 4096))
    except OSError:
        return None
    found = _SHAPE.search(header)
    if found is None:
        return None
    return tuple(int(x) for x in found.group(1).replace(b" ", b"").split(b",") if x)


def option_value(argv: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` or ``--name=VALUE`` in argv (the last one wins, as in Click)."""
    value = None
    for index, arg in enumerate(argv):
        if arg == name and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(name + "="):
            value = arg[len(name) + 1:]
    return value


def likely_on_gpu(argv: list[str]) -> int | None:
    """The device ordinal when ``lap <argv>`` will probably solve on the GPU, else None.

    Only ``lap solve`` of one .npy input whose header shows a stack, or a matrix that ``auto``
    gives to the kernel by its shape alone (engines/auto.py), with a solver that may use CUDA,
    in this process (not on Dask workers)."""
    if not argv or argv[0] != "solve" or any(a in ("-h", "--help", "--dask", "--points") for a in argv):
        return None  # (with Dask the workers solve, each on its own device; point sets are not guessed)
    if option_value(argv, "--scheduler") is not None:
        return None
    solver = option_value(argv, "--solver") or "auto"
    if solver not in GPU_SOLVERS:
        return None
    inputs, skip = [], False
    for arg in argv[1:]:
        if skip:
            skip = False
        elif arg in SOLVE_OPTIONS_WITH_VALUES:
            skip = True
        elif not arg.startswith("-") or arg == "-":
            inputs.append(arg)
    if len(inputs) != 1 or not inputs[0].lower().endswith(".npy"):
        return None
    shape = npy_shape(inputs[0])
    if shape is None or len(shape) not in (2, 3) or 0 in shape:
        return None
    import importlib.util

    if importlib.util.find_spec("cupy") is None:  # the CUDA engines need lapcli's cuda extra
        return None
    if len(shape) == 3 and max(shape[1:]) > 2048:  # auto gives such stacks to scipy-batch
        return None
    if len(shape) == 2 and solver == "auto":
        from ..engines.auto import may_choose_gpu  # no NumPy behind it

        if not may_choose_gpu(*shape):
            return None
    device = option_value(argv, "--device")
    return int(device) if device is not None and device.isascii() and device.isdigit() else 0


def _start_driver(ordinal: int) -> None:
    """cuInit and the primary context of one device, through ctypes (the GIL is released during
    each call). Any failure leaves the work to the launchers."""
    global _context_made, _ordinal
    _ordinal = ordinal
    import ctypes

    try:
        driver = ctypes.CDLL("libcuda.so.1")
        if driver.cuInit(0) != 0:
            return
        device, context = ctypes.c_int(), ctypes.c_void_p()
        if driver.cuDeviceGet(ctypes.byref(device), ordinal) != 0:
            return
        if driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0:
            _context_made = True
    except (OSError, AttributeError):  # no driver library here
        return


def start_early(argv: list[str]) -> bool:
    """Start the driver in a thread when ``lap <argv>`` will probably need it; True if started.
    A guess only: any error in it leaves everything to the command. Either way the CUDA runtime
    gets this module's hooks (lapcli.cuda.early_start): its launchers wait for the thread and say
    when they made a context, which ``detach_teardown`` needs to know."""
    global _thread
    from ..cuda import early_start

    early_start.install(sys.modules[__name__])
    try:
        ordinal = likely_on_gpu(argv)
    except Exception:  # noqa: BLE001 - never let the guess break the command
        return False
    if ordinal is None or _thread is not None:
        return False
    _thread = threading.Thread(target=_start_driver, args=(ordinal,), name="lapcli-cuda-start", daemon=True)
    _thread.start()
    return True


def wait() -> None:
    """Return once the early start (if any) has finished; a launcher calls this before cuInit."""
    if _thread is not None:
        _thread.join()


def note_context(ordinal: int = 0) -> None:
    """A launcher made a CUDA context in this process (on device ``ordinal``)."""
    global _context_made, _ordinal
    _context_made, _ordinal = True, ordinal


def _default_compute_mode() -> bool:
    """Whether the device shares itself between processes (compute mode DEFAULT). In an exclusive
    mode the next process could not open the device while the child still holds the context."""
    import ctypes

    try:
        driver = ctypes.CDLL("libcuda.so.1")
        device, mode = ctypes.c_int(), ctypes.c_int(-1)
        if driver.cuDeviceGet(ctypes.byref(device), _ordinal) != 0:
            return False
        return driver.cuDeviceGetAttribute(ctypes.byref(mode), 20, device) == 0 and mode.value == 0  # COMPUTE_MODE
    except (OSError, AttributeError):
        return False


def started_early() -> bool:
    """Whether this process began initialising the driver before NumPy's import."""
    return _thread is not None


def _pipe_above_stdio() -> tuple[int, int]:
    """os.pipe() with both ends above fd 2 (the child closes 0-2, which a caller may have left free)."""
    import fcntl

    ends = []
    for fd in os.pipe():
        if fd <= 2:
            moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
            os.close(fd)
            fd = moved
        ends.append(fd)
    return ends[0], ends[1]


def detach_teardown() -> int | None:
    """Fork a child that keeps this process's files open until this process has exited, so that
    the CUDA driver tears the context down in the child (after the command has returned). Only
    when a context exists; returns the child's pid, or None. Call it last, after all output is
    flushed."""
    wait()  # the thread may still be in cuInit: never exit under it
    if not (_context_made or "cupy" in sys.modules) or os.environ.get("LAPCLI_DETACH_TEARDOWN", "1") == "0":
        return None
    if not hasattr(os, "fork") or not _default_compute_mode():
        return None
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass
    import signal
    import warnings

    try:
        read_end, write_end = _pipe_above_stdio()
    except OSError:
        return None
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})  # the child keeps them blocked
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded fork": the child runs no Python code of others
            pid = os.fork()
    except (OSError, RuntimeError, DeprecationWarning):
        pid = None
    if pid != 0:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if pid is None:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # the child: no CUDA call, no flush, no finaliser; only wait for the parent's exit
        try:
            os.close(write_end)
            for fd in (0, 1, 2):
                try:
                    os.close(fd)
                except OSError:
                    pass
            os.read(read_end, 1)  # end of file once the parent has exited
        finally:
            os._exit(0)
    os.close(read_end)  # the write end stays open until this process exits
    return pid
