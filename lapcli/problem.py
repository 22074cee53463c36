"""Validate a cost matrix the way scipy does, and turn it into the square problem the solvers share.

Everything a user may feed ``scipy.optimize.linear_sum_assignment`` is accepted here: lists,
NumPy or CuPy arrays, rectangular shapes, bool/int/uint/float dtypes, ``maximize``, and
forbidden entries (``+inf`` when minimising, ``-inf`` when maximising). The Hungarian solvers
(NumPy twin and CUDA kernel) then only ever see a *work matrix*:

* square k×k with k = max(n_rows, n_cols): a tall matrix is transposed so that rows ≤ columns,
  and the missing rows are padded with zeros (a padded row may take any column at no cost, so
  the real rows get exactly scipy's min(n, m) pairs). The one padded copy is made where the
  input lives: on the host for NumPy input (then copied to the GPU once), on the device for CuPy
  input. A square int32/float32/float64 input needs no copy at all;
* negated when maximising (min of −C is max of C);
* forbidden entries replaced by a finite sentinel larger than any finite assignment could cost,
  so the solvers never see infinities; an assignment that still uses one proves infeasibility;
* stored in one of the four working dtypes int32, int64, float32 or float64.

Integer costs stay exact: the solvers keep their duals in int64, and we refuse integer ranges
whose duals could overflow int64 instead of silently losing exactness.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InfeasibleError, LapInputError

WORK_DTYPES = ("int32", "int64", "float32", "float64")

# Duals and slacks of integer problems live in int64. They stay within a small multiple of
# (k + 1) · max|cost|, so we accept integer costs up to this bound and refuse beyond it.
_INT64_SAFE = 2**62

# Float tolerance: a reduced cost counts as zero when it is at most
#   eps = k · max|work| · 2^-50,
# i.e. a few units in the last place of the largest number the duals can reach. Slack is
# always recomputed from the costs and the duals in float64 (never accumulated in place),
# so rounding does not grow with the number of iterations. The optimum found is exact for
# costs perturbed by at most eps per entry: objective error ≤ 2·k·eps.
_FLOAT_EPS_FACTOR = 2.0**-50


def objective_tolerance(cost) -> float:
    """How far two objectives of ``cost`` may differ and both be optimal under our tolerance:
    0 for integers (exact); for floats the 2·k·eps bound above plus summation rounding."""
    if cost.dtype.kind in "biu" or cost.size == 0:
        return 0.0
    finite = np.abs(cost[np.isfinite(cost)])
    scale = float(finite.max()) if finite.size else 1.0
    k = max(cost.shape)
    return 2 * k * (k * scale * _FLOAT_EPS_FACTOR) + 1e-9 * scale * k


def array_module(cost: Any):
    """Return cupy for a CuPy array, numpy otherwise (without importing CuPy needlessly)."""
    if type(cost).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def invalid_entries() -> ValueError:
    return LapInputError("matrix contains invalid numeric entries")


def as_cost_matrix(cost: Any):
    """Check what scipy checks, with scipy's exception types and messages.

    Returns (array, xp): a 2-D numeric array (NumPy or CuPy) and its array module.
    """
    xp = array_module(cost)
    arr = xp.asarray(cost)
    if arr.ndim != 2:
        raise LapInputError(f"expected a matrix (2-D array), got a {arr.ndim} array")
    kind = arr.dtype.kind
    if kind not in "biuf":
        raise TypeError(
            f"Cannot cast array data from {arr.dtype!r} to dtype('float64') "
            "according to the rule 'safe'"
        )
    return arr, xp


def check_entries(arr, xp, maximize: bool) -> bool:
    """Reject NaN and the wrong-signed infinity (as scipy does); return whether any entry is forbidden."""
    if arr.dtype.kind != "f" or arr.size == 0:
        return False
    if bool(xp.isfinite(arr).all()):  # the common case: one pass
        return False
    if bool(xp.isnan(arr).any()):
        raise invalid_entries()
    wrong_inf, forbidden_inf = (np.inf, -np.inf) if maximize else (-np.inf, np.inf)
    if bool((arr == wrong_inf).any()):
        raise invalid_entries()
    return bool((arr == forbidden_inf).any())


@dataclass
class Problem:
    """A validated cost matrix plus everything needed to solve it and map the answer back."""

    original: Any  # the validated 2-D array (NumPy or CuPy), never modified
    xp: Any
    maximize: bool
    has_forbidden: bool
    requested_dtype: str | None = None
    _work: Any = field(default=None, repr=False)
    _eps: float = 0.0

    @property
    def n_rows(self) -> int:
        return int(self.original.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.original.shape[1])

    @property
    def transposed(self) -> bool:
        """True when the work matrix is built from the transpose (more rows than columns)."""
        return self.n_rows > self.n_cols

    @property
    def size(self) -> int:
        """k, the side of the square work matrix."""
        return max(self.n_rows, self.n_cols)

    @property
    def is_empty(self) -> bool:
        return self.n_rows == 0 or self.n_cols == 0

    @property
    def work(self):
        """The square work matrix (built on first use: the scipy path never needs it)."""
        if self._work is None:
            self._work, self._eps = build_work_matrix(self)
        return self._work

    @property
    def eps(self) -> float:
        """Zero tolerance for reduced costs: 0 for integers, see _FLOAT_EPS_FACTOR for floats."""
        self.work  # noqa: B018 - builds work and eps together
        return self._eps

    def assignment_from_work(self, col_of_row) -> tuple[np.ndarray, np.ndarray]:
        """Map a permutation of the work matrix back to (row_ind, col_ind) of the original.

        Drops the padded rows, undoes the transpose, sorts by row as scipy does, and raises
        InfeasibleError when a forbidden entry had to be used.
        """
        col_of_row = np.asarray(col_of_row, dtype=np.int64)
        real = min(self.n_rows, self.n_cols)
        rows = np.arange(real, dtype=np.int64)
        cols = col_of_row[:real]
        if self.transposed:
            rows, cols = cols, rows
            order = np.argsort(rows, kind="stable")
            rows, cols = rows[order], cols[order]
        if self.has_forbidden and bool(np.isinf(self.values_at(rows, cols)).any()):
            raise InfeasibleError()
        return rows, cols

    def values_at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Original costs at the given positions, as a host array."""
        if self.xp is np:
            return np.asarray(self.original[rows, cols])
        return self.xp.asnumpy(self.original[self.xp.asarray(rows), self.xp.asarray(cols)])

    def objective(self, rows: np.ndarray, cols: np.ndarray) -> int | float:
        """Sum of the chosen original costs: exact (Python int) for integers, fsum for floats."""
        values = self.values_at(rows, cols)
        if values.dtype.kind in "biu":
            return int(sum(int(x) for x in values.tolist()))
        return math.fsum(values.tolist())


def default_work_dtype(values, source_dtype) -> str:
    """int32 when the (sign-adjusted) integers fit it, else int64; float32 and float16 inputs
    work in float32, other floats in float64."""
    if source_dtype.kind in "biu":
        if values.size == 0 or _always_fits(values.dtype, np.dtype(np.int32)):
            return "int32"
        lo, hi = int(values.min()), int(values.max())
        return "int32" if -(2**31) <= lo and hi < 2**31 else "int64"
    return "float32" if source_dtype.itemsize <= 4 else "float64"


def _always_fits(source: np.dtype, target: np.dtype) -> bool:
    """Every value of an integer dtype ``source`` is exact in ``target``, so no scan is needed."""
    if target.kind == "f":
        return source.itemsize * 8 - (source.kind == "i") <= np.finfo(target).nmant + 1
    return np.can_cast(source, target, casting="safe")


def prepare(cost: Any, *, maximize: bool = False, dtype: str | None = None) -> Problem:
    """Validate ``cost`` and wrap it in a Problem (the work matrix is built lazily)."""
    if dtype is not None and dtype not in WORK_DTYPES:
        raise LapInputError(f"unknown working dtype {dtype!r}; choose one of {', '.join(WORK_DTYPES)}")
    arr, xp = as_cost_matrix(cost)
    has_forbidden = check_entries(arr, xp, maximize)
    return Problem(
        original=arr, xp=xp, maximize=bool(maximize), has_forbidden=has_forbidden, requested_dtype=dtype
    )


def build_work_matrix(problem: Problem):
    """Square, sign-adjusted, sentinel-filled work matrix in the working dtype, and its eps."""
    xp = problem.xp
    arr = problem.original
    if problem.transposed:
        arr = arr.T
    n, k = arr.shape  # n ≤ k after the transpose
    if arr.dtype.kind in "biu":
        values = _integer_values(arr, xp, problem.maximize)
    else:
        values = _float_values(arr, xp, problem.maximize, k, problem.has_forbidden)
    dtype_name = problem.requested_dtype or default_work_dtype(values, arr.dtype)
    values = _cast_checked(values, xp, dtype_name, k)
    if n < k:
        padded = xp.zeros((k, k), dtype=values.dtype)
        padded[:n] = values
        values = padded
    if values.dtype.kind == "f":
        scale = max(-float(values.min()), float(values.max())) if values.size else 1.0
        eps = k * max(scale, np.finfo(np.float64).tiny) * _FLOAT_EPS_FACTOR
    else:
        eps = 0.0
    return xp.ascontiguousarray(values), eps


def _integer_values(arr, xp, maximize: bool):
    """Integer costs (negated when maximising) as int64, refusing magnitudes that could overflow."""
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int8)
    if arr.dtype == np.uint64 and arr.size and int(arr.max()) >= 2**63:
        raise LapInputError("integer costs exceed the int64 range; convert them to float64")
    if maximize or arr.dtype.itemsize > 4 or arr.dtype == np.uint32:
        arr = arr.astype(np.int64, copy=False)
    return -arr if maximize else arr


def _float_values(arr, xp, maximize: bool, k: int, has_forbidden: bool):
    """Float costs (negated when maximising: exact), forbidden entries set to a sentinel; float16
    widens to float32, other floats keep their dtype (no float64 round trip of the matrix).

    The sentinel exceeds hi + k·(hi − lo + 1): any assignment through one forbidden entry costs
    more than every assignment of finite entries, so the optimum uses one only when it must.
    """
    values = arr.astype(np.float32) if arr.dtype.itemsize < 4 else arr
    if maximize:
        values = -values
    if not has_forbidden:
        return values
    finite = xp.isfinite(values)
    if not bool(finite.any()):
        raise InfeasibleError()
    lo = float(values[finite].min())
    hi = float(values[finite].max())
    sentinel = hi + (k + 1) * (hi - lo + 1.0)
    if not math.isfinite(sentinel):
        raise LapInputError("finite costs span too wide a range to mark forbidden entries")
    if not np.isfinite(values.dtype.type(sentinel)):
        values = values.astype(np.float64)
    return xp.where(finite, values, values.dtype.type(sentinel))


def _cast_checked(values, xp, dtype_name: str, k: int):
    """Cast to the working dtype, refusing casts that would change integer values. Range scans
    run only where a value could actually fail (e.g. none for int32 input solved as int32)."""
    target = np.dtype(dtype_name)
    if values.size == 0:
        return values.astype(target)
    if values.dtype.kind in "iu" and _always_fits(values.dtype, target) and values.dtype.itemsize <= 4:
        return values.astype(target, copy=False)  # int32 duals in int64 cannot overflow
    if values.dtype.kind == "f" and target.kind == "f":
        return values.astype(target, copy=False)  # float working types need no range check
    lo, hi = values.min(), values.max()
    if values.dtype.kind == "f" and target.kind == "i":
        if not bool((values == xp.floor(values)).all()):
            raise LapInputError(f"costs are not integers, so they cannot be solved as {dtype_name}")
    if values.dtype.kind in "iu" and target.kind == "f":
        limit = 2 ** (np.finfo(target).nmant + 1)
        if max(abs(int(lo)), abs(int(hi))) > limit:
            raise LapInputError(
                f"integer costs beyond ±{limit} are not exact in {dtype_name}; use --dtype int64 or float64"
            )
    if target.kind == "i":
        info = np.iinfo(target)
        if float(lo) < info.min or float(hi) > info.max:
            raise LapInputError(
                f"costs in [{lo}, {hi}] do not fit {dtype_name}; use --dtype int64 or float64"
            )
        bound = max(abs(int(lo)), abs(int(hi)))
        if bound * 4 * (k + 1) >= _INT64_SAFE:
            raise LapInputError(
                f"integer costs up to {bound} are too large for exact solving at n={k} "
                "(the int64 duals could overflow); convert them to float64"
            )
    return values.astype(target, copy=False)
