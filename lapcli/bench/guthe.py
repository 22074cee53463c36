"""The ``guthe-omp`` bench peer: Guthe & Thuerck's OpenMP LAP solver (ACM TOMS Algorithm 1015,
github.com/sguthe/lap-solver), timed in-process beside lapcli's engines on the same matrices.

Why: it is the fastest published CPU solver for dense tables, so ``lap bench`` should show it, not a
figure copied from a paper run on another machine. Its code is not ours to ship: the user builds a
shared library from the authors' headers with ``benchmarks/peers/build_guthe.sh`` and names it in
the environment variable ``LAPCLI_GUTHE_OMP``; it is loaded with ctypes. One call takes the host
array and returns the assignment, so the copy into the solver's own table (in the C call) and the
epsilon scaling that its test program and papers use are part of the time, as for its users.
"""

from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

ENV = "LAPCLI_GUTHE_OMP"
BUILD = "benchmarks/peers/build_guthe.sh"

# the C function of each cost dtype (benchmarks/peers/guthe_omp.cpp)
FUNCTIONS = {
    np.dtype(np.int32): "guthe_omp_solve_i32",
    np.dtype(np.int64): "guthe_omp_solve_i64",
    np.dtype(np.float32): "guthe_omp_solve_f32",
    np.dtype(np.float64): "guthe_omp_solve_f64",
}
FAILURES = {1: "bad shape", 2: "the solver threw (out of memory?)", 3: "its answer is not a matching"}


@functools.cache
def _library(path: str) -> ctypes.CDLL:
    """The library at ``path``, loaded once, its functions typed (OSError/AttributeError if not)."""
    library = ctypes.CDLL(path)
    for dtype, name in FUNCTIONS.items():
        function = getattr(library, name)
        function.restype = ctypes.c_int
        function.argtypes = [np.ctypeslib.ndpointer(dtype, flags="C_CONTIGUOUS"), ctypes.c_int, ctypes.c_int,
                             np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS")]
    return library


def loaded() -> ctypes.CDLL:
    """The library ``LAPCLI_GUTHE_OMP`` names, loaded once a process."""
    path = os.environ.get(ENV)
    if not path:
        raise RuntimeError(f"{ENV} is not set (build the library with {BUILD})")
    return _library(os.path.abspath(path))


def available() -> tuple[bool, str]:
    """(True, "") when ``LAPCLI_GUTHE_OMP`` names a library that loads, else False and why, one line."""
    try:
        loaded()
    except RuntimeError as error:
        return False, str(error)
    except (OSError, AttributeError) as error:
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return False, f"{ENV}={os.environ.get(ENV)} cannot be loaded: {reason}"
    return True, ""


def solve(cost: np.ndarray) -> np.ndarray:
    """The column of each row (int32; -1 for the rows left over when n > m) of a minimal assignment
    of the finite 2-D ``cost`` (int32, int64, float32 or float64). A wide or square matrix goes to
    the library as it is (a C-contiguous copy if it is not); a tall one as its transpose."""
    cost = np.asarray(cost)
    if cost.ndim != 2:
        raise ValueError(f"guthe-omp solves a matrix, got {cost.ndim} dimensions")
    if cost.dtype not in FUNCTIONS:
        raise TypeError(f"guthe-omp takes {', '.join(map(str, FUNCTIONS))} costs, got {cost.dtype}")
    n, m = cost.shape
    if n > m:  # the solver wants n <= m: solve the transpose, read its answer backwards
        row_of_column = solve(cost.T)
        column_of_row = np.full(n, -1, dtype=np.int32)
        column_of_row[row_of_column] = np.arange(m, dtype=np.int32)
        return column_of_row
    column_of_row = np.empty(n, dtype=np.int32)
    if n == 0:
        return column_of_row
    code = getattr(loaded(), FUNCTIONS[cost.dtype])(np.ascontiguousarray(cost), n, m, column_of_row)
    if code != 0:
        raise RuntimeError(f"guthe-omp failed on {n}×{m} {cost.dtype}: {FAILURES.get(code, f'code {code}')}")
    return column_of_row
