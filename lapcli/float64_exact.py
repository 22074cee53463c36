"""Whether a float64 solver (scipy, lapx) is exact on integer costs, and the exact reduction that
makes it so where the costs as given are too wide: integers below 2^53 are exact in float64, and a
shortest-path solver forms duals and path lengths within 4·(k + 1)·max|c| of them."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

FLOAT64_EXACT = 2**53  # integers below this are exact in float64


def float64_exact(values, side: int | None = None) -> bool:
    """Whether a float64 solver (scipy) computes exactly on these integer costs: every value, and
    every dual and path length it forms (within 4·(k + 1)·max|c|), below 2^53. Floats: True (they are
    solved as the floats they are). Scans the values only for 64-bit integers. ``side``: k, the
    largest side of the matrices the values come from (default: ``values``' own last two axes;
    given, ``values`` may be any array of their entries, e.g. several matrices' in one)."""
    dtype = values.dtype
    if dtype.kind not in "biu" or values.size == 0:
        return True
    k = side if side is not None else max(values.shape[-2:])
    if float64_exact_dtype(dtype, k):
        return True  # no value of the dtype is too wide: no scan
    return float64_exact_magnitude(max(abs(int(values.min())), abs(int(values.max()))), k)


@lru_cache(maxsize=1024)
def float64_exact_dtype(dtype, side: int) -> bool:
    """Whether every matrix of this integer ``dtype`` with sides up to ``side`` is float64_exact,
    whatever its values (no scan needed)."""
    info = np.iinfo(dtype) if np.dtype(dtype).kind != "b" else np.iinfo(np.int8)
    return float64_exact_magnitude(max(-int(info.min), int(info.max)), side)


def float64_exact_magnitude(largest: float, side: int) -> bool:
    """Whether integer costs of magnitude up to ``largest`` in matrices with sides up to ``side``
    are float64_exact. ``largest`` may be the magnitude converted to float64: integers below 2^53
    convert exactly and larger ones stay above the bound, so the answer is the same."""
    return largest * 4 * (side + 1) < FLOAT64_EXACT


def reduced_for_float64(matrix: np.ndarray, maximize: bool) -> np.ndarray | None:
    """An integer host matrix to MINIMISE with the same optimal assignments as ``matrix`` (to
    maximise when ``maximize``), reduced exactly along its smaller side so that a float64 solver is
    exact on it: each row's minimum subtracted (its maximum minus each cost, maximising), or each
    column's for a tall matrix, where not every row is assigned but every column is. Unsigned
    differences of 64-bit integers are exact; None when even the reduced costs are too wide."""
    values = matrix.T if matrix.shape[0] > matrix.shape[1] else matrix
    if values.dtype.kind == "b":
        values = values.astype(np.int8)
    unsigned = values.astype(np.uint64)  # two's complement: differences below are exact modulo 2^64
    if maximize:
        reduced = values.max(axis=1).astype(np.uint64)[:, None] - unsigned
    else:
        reduced = unsigned - values.min(axis=1).astype(np.uint64)[:, None]
    if reduced.size and int(reduced.max()) * 4 * (max(values.shape) + 1) >= FLOAT64_EXACT:
        return None
    reduced = reduced.astype(np.int64)
    return reduced.T if matrix.shape[0] > matrix.shape[1] else reduced


def float64_solvable(matrix: np.ndarray, maximize: bool) -> tuple[np.ndarray, bool] | None:
    """(costs, maximize) that a float64 solver solves exactly, with ``matrix``'s optimal
    assignments: the matrix as given where float64 holds it, else its exact reduction (to
    minimise); None when even that is too wide."""
    if float64_exact(matrix):
        return matrix, maximize
    reduced = reduced_for_float64(matrix, maximize)
    return None if reduced is None else (reduced, False)
