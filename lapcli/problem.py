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

* for float64, reduced: each row's minimum is subtracted (and each column's, for a square input),
  so the numbers the solvers compare are the *spread* of the costs, not their magnitude
  (``1e6 + U(0, 1e-7)`` becomes ``U(0, 1e-7)`` exactly: Sterbenz). The offsets are kept and added
  back to the duals;
* stored in one of the four working dtypes int32, int64, float32 or float64.

Integer costs stay exact: the solvers keep their duals in int64. When the integers are too large
for exact int64 duals even after the same reduction (done exactly, in unsigned arithmetic), the
problem is solved in float64 as scipy solves every input, and the report says so.

The float tolerance (one definition, used by the engines, the certificate, bench, the fuzzer and
the tests): a reduced cost counts as zero when it is at most

    eps = k · S · 2^-50,       S = the largest reduced cost (the spread),

i.e. about 4·k units in the last place of S. The duals stay within k·S in magnitude, so computing
a slack c − u − v in float64 errs by at most a few ulp(k·S) < eps: slack is always recomputed from
the costs and the duals (never accumulated in place), so rounding does not grow with the iteration
count. Guarantee (checked on every solve by the certificate, see lapcli/certificate.py): the
assignment is optimal for costs perturbed by at most eps per entry, so its objective exceeds the
optimum by at most 2·k·eps plus the rounding of the reduction (2^-52·S per entry, 2·k·2^-52·S in
all) — ``objective_tolerance`` below, plus the rounding of summing the objective itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import InfeasibleError, LapInputError, LapTypeError

WORK_DTYPES = ("int32", "int64", "float32", "float64")

# Duals and slacks of integer problems live in int64. They stay within a small multiple of
# (k + 1) · max|cost|, so integer costs are solved exactly while that bound is below 2^62.
_INT64_SAFE = 2**62

_FLOAT_EPS_FACTOR = 2.0**-50  # eps = k · S · 2^-50 (module docstring)
_ROUNDING = 2.0**-52


def float_eps(k: int, spread: float) -> float:
    """The zero tolerance of a k×k float work matrix whose reduced costs lie in [0, spread]."""
    return k * max(spread, np.finfo(np.float64).tiny) * _FLOAT_EPS_FACTOR


def objective_tolerance(cost) -> float:
    """How far two objectives of ``cost`` may differ and both be optimal under our tolerance:
    0 for integers (exact); for floats 2·k·(eps + rounding of the reduction), with eps taken from
    the spread of the finite costs, plus the rounding of the two sums (fsum: correctly rounded)."""
    if cost.dtype.kind in "biu" or cost.size == 0:
        return 0.0
    values = np.asarray(cost, dtype=np.float64)
    if values.ndim == 2 and values.shape[0] > values.shape[1]:
        values = values.T  # the work matrix of a tall problem is its transpose: rows are reduced there
    finite = np.isfinite(values)
    k = max(values.shape)
    if not finite.any():
        return 0.0
    row_min = np.where(finite, values, np.inf).min(axis=1, keepdims=True)
    row_min = np.where(np.isfinite(row_min), row_min, 0.0)
    spread = float(np.where(finite, values - row_min, 0.0).max())
    largest = float(np.abs(values[finite]).max())
    if cost.dtype.itemsize <= 4:  # float32 work matrices are not reduced: eps follows |c|
        spread = largest
    per_entry = float_eps(k, spread) + 2 * _ROUNDING * spread
    summation = 2 * _ROUNDING * k * largest  # each fsum is within half an ulp of |objective| ≤ k·max|c|
    return 2 * k * per_entry + summation


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
        raise LapTypeError(
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
class WorkMatrix:
    """The square k×k problem an engine solves, on the array module it was built with.

    ``row_offset`` and ``col_offset`` (host arrays of k, or None for zeros) are what the reduction
    subtracted: the duals of the work matrix plus these offsets are the duals of the unreduced,
    sign-adjusted square problem. ``notes`` say where arithmetic was widened.
    """

    values: Any
    eps: float
    row_offset: np.ndarray | None = None
    col_offset: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def dtype(self) -> str:
        return str(self.values.dtype)


@dataclass
class Problem:
    """A validated cost matrix plus everything needed to solve it and map the answer back."""

    original: Any  # the validated 2-D array (NumPy or CuPy), never modified
    xp: Any
    maximize: bool
    forbidden: bool | None  # any forbidden entry; None: the entries are not checked yet
    requested_dtype: str | None = None
    _works: dict = field(default_factory=dict, repr=False)

    @property
    def has_forbidden(self) -> bool:
        """Whether an entry is forbidden (+inf minimising, −inf maximising); checks the entries
        where the input lives (scipy's errors for NaN or the wrong infinity) if nobody has yet."""
        if self.forbidden is None:
            self.forbidden = check_entries(self.original, self.xp, self.maximize)
        return self.forbidden

    def check_entries_on(self, copy, xp) -> None:
        """Check the entries on ``copy``, the input already copied to module ``xp`` (the GPU: one
        pass at device bandwidth instead of a host pass before the upload), unless done already."""
        if self.forbidden is None:
            self.forbidden = check_entries(copy, xp, self.maximize)

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

    def work_on(self, xp=None, source=None) -> WorkMatrix:
        """The square work matrix built with array module ``xp`` (default: where the input lives),
        from ``source`` (the original already copied to that module, e.g. uploaded to the GPU).
        Built once per module: the scipy path never builds one."""
        xp = xp or self.xp
        key = xp.__name__
        if key not in self._works:
            if source is None:
                source = self.original if xp is self.xp else _to_module(self.original, xp)
            self._works[key] = build_work_matrix(self, source, xp)
        return self._works[key]

    def notes(self) -> list[str]:
        """What building the work matrices noted (e.g. a fallback to float64)."""
        return [note for work in self._works.values() for note in work.notes]

    @property
    def work(self):
        """The work matrix's values, where the input lives."""
        return self.work_on().values

    @property
    def eps(self) -> float:
        """Zero tolerance for reduced costs: 0 for integers, see ``float_eps`` for floats."""
        return self.work_on().eps

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

    def duals_from_work(self, u, v, work: WorkMatrix) -> tuple[np.ndarray, np.ndarray]:
        """The work matrix's duals (host arrays of k) as duals of the caller's matrix: offsets of
        the reduction added back, padding dropped, transpose and maximize's negation undone.
        For a minimisation cost − u − v ≥ 0 with equality on the assignment; ≤ 0 when maximising."""
        exact = work.values.dtype.kind in "iu" and all(
            o is None or o.dtype.kind in "iu" for o in (work.row_offset, work.col_offset))
        dtype = np.int64 if exact else np.float64
        u = np.asarray(u).astype(dtype)
        v = np.asarray(v).astype(dtype)
        if work.row_offset is not None:
            u = u + work.row_offset.astype(dtype)
        if work.col_offset is not None:
            v = v + work.col_offset.astype(dtype)
        if self.transposed:  # work rows are the caller's columns (then padding), work columns its rows
            row_duals, col_duals = v, u[: self.n_cols]
        else:
            row_duals, col_duals = u[: self.n_rows], v
        if self.maximize:
            row_duals, col_duals = -row_duals, -col_duals
        return row_duals, col_duals

    def values_at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Original costs at the given positions, as a host array."""
        if self.xp is np:
            return np.asarray(self.original[rows, cols])
        return self.xp.asnumpy(self.original[self.xp.asarray(rows), self.xp.asarray(cols)])

    def objective(self, rows: np.ndarray, cols: np.ndarray) -> int | float:
        """Sum of the chosen original costs: exact (Python int) for integers, fsum for floats."""
        values = self.values_at(rows, cols)
        if values.dtype.kind in "biu":
            if values.dtype.itemsize < 8 or (values.size and max(abs(int(values.max())), abs(int(values.min())))
                                               < 2**63 // max(values.size, 1)):
                return int(values.sum(dtype=np.int64))  # cannot overflow
            return sum(values.tolist())  # Python ints: exact at any size
        return math.fsum(values.tolist())


def _to_module(array, xp):
    if xp is np:
        import cupy

        return cupy.asnumpy(array)
    return xp.asarray(array)


def _always_fits(source: np.dtype, target: np.dtype) -> bool:
    """Every value of an integer dtype ``source`` is exact in ``target``, so no scan is needed."""
    if target.kind == "f":
        return source.itemsize * 8 - (source.kind == "i") <= np.finfo(target).nmant + 1
    return np.can_cast(source, target, casting="safe")


def prepare(cost: Any, *, maximize: bool = False, dtype: str | None = None, check: bool = True) -> Problem:
    """Validate ``cost`` and wrap it in a Problem (the work matrix is built lazily). With
    ``check=False`` the entries (NaN, infinities) are checked later, by the first use of
    ``has_forbidden`` or by an engine that checks them on its own copy (``check_entries_on``)."""
    if dtype is not None and dtype not in WORK_DTYPES:
        raise LapInputError(f"unknown working dtype {dtype!r}; choose one of {', '.join(WORK_DTYPES)}")
    arr, xp = as_cost_matrix(cost)
    problem = Problem(original=arr, xp=xp, maximize=bool(maximize), forbidden=None, requested_dtype=dtype)
    if check:
        problem.has_forbidden  # noqa: B018 - checks the entries now
    return problem


# ----------------------------------------------------------------------------- the work matrix
def build_work_matrix(problem: Problem, source, xp) -> WorkMatrix:
    """Square, sign-adjusted, reduced (floats), sentinel-filled work matrix in the working dtype."""
    arr = source.T if problem.transposed else source
    n, k = arr.shape  # n ≤ k after the transpose
    requested = problem.requested_dtype
    if arr.dtype.kind == "f" and requested is not None and requested.startswith("int"):
        arr = _floats_as_integers(arr, xp, requested, problem.has_forbidden)
    if arr.dtype.kind in "biu" and (requested is None or requested.startswith("int")):
        work = _integer_work(arr, xp, problem.maximize, k, requested)
        if work is not None:
            return _pad(work, xp, n, k)
        if requested is not None:
            raise LapInputError(f"integer costs are too large for exact solving as {requested} at n={k} "
                                "(the int64 duals could overflow); drop --dtype to solve in float64")
        arr = arr.astype(np.float64)  # too large for exact int64 duals: float64, as scipy
        work = _float_work(arr, xp, problem.maximize, k, problem.has_forbidden, "float64")
        work.notes.append(f"integer costs too large for exact int64 duals at n={k}: solved in float64 "
                          "(as scipy does)")
        return work
    target = requested or ("float32" if arr.dtype.itemsize <= 4 and arr.dtype.kind == "f" else "float64")
    if arr.dtype.kind in "biu":
        _check_exact_in_float(arr, target)
    return _float_work(arr, xp, problem.maximize, k, problem.has_forbidden, target)


def _pad(work: WorkMatrix, xp, n: int, k: int) -> WorkMatrix:
    """Zero rows below the n real rows: a padded row takes any column at no cost."""
    if n < k:
        padded = xp.zeros((k, k), dtype=work.values.dtype)
        padded[:n] = work.values
        work.values = padded
        if work.row_offset is not None:
            work.row_offset = np.concatenate([work.row_offset, np.zeros(k - n, work.row_offset.dtype)])
    work.values = xp.ascontiguousarray(work.values)
    return work


def _integer_work(arr, xp, maximize: bool, k: int, requested: str | None) -> WorkMatrix | None:
    """Exact integer work matrix, or None when even the reduced integers could overflow the int64
    duals (the caller then solves in float64). A requested int dtype that cannot hold the values
    is an error, never a silent change."""
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int8)
    if maximize:
        arr = _negate_exactly(arr)
        if arr is None:
            return None
    if arr.size == 0:
        return WorkMatrix(arr.astype(requested or "int32"), 0.0)
    if arr.dtype.itemsize <= 4 and arr.dtype != np.uint32:
        target = requested or "int32"  # |cost| < 2^31: duals within 4·(k+1)·2^31 < 2^62 for k ≤ 2^28
        return WorkMatrix(arr.astype(target, copy=False), 0.0)
    lo, hi = int(arr.min()), int(arr.max())
    bound = max(abs(lo), abs(hi))
    row_offset = None
    if bound * 4 * (k + 1) >= _INT64_SAFE:
        arr, row_offset = _reduce_rows_exactly(arr, xp)
        lo, hi = 0, int(arr.max())
        if hi * 4 * (k + 1) >= _INT64_SAFE:
            return None
    target = requested or ("int32" if -(2**31) <= lo and hi < 2**31 else "int64")
    info = np.iinfo(target)
    if lo < info.min or hi > info.max:
        raise LapInputError(f"costs in [{lo}, {hi}] do not fit {target}; use --dtype int64 or float64")
    return WorkMatrix(arr.astype(target, copy=False), 0.0, row_offset=row_offset)


def _negate_exactly(arr):
    """−arr in int64, or None when a value has no int64 negation (−2^63, or uint64 ≥ 2^63): the
    caller then solves in float64, as scipy does."""
    if arr.dtype.itemsize == 8 and arr.size:
        if arr.dtype == np.uint64 and int(arr.max()) >= 2**63:
            return None
        if arr.dtype == np.int64 and int(arr.min()) == -(2**63):
            return None
    return -arr.astype(np.int64)


def _reduce_rows_exactly(arr, xp):
    """Subtract each row's minimum exactly (unsigned differences of 64-bit integers are exact
    modulo 2^64 and the true difference lies in [0, 2^64)). Returns (reduced uint64 or int64,
    row offsets as int64 or Python-int object array)."""
    row_min = arr.min(axis=1)
    if arr.dtype == np.int64:
        reduced = arr.view(np.uint64) - row_min.view(np.uint64)[:, None]
        offsets = xp.asnumpy(row_min) if xp is not np else row_min
    else:
        reduced = arr.astype(np.uint64, copy=False) - row_min.astype(np.uint64)[:, None]
        host = xp.asnumpy(row_min) if xp is not np else np.asarray(row_min)
        offsets = host.astype(np.int64) if int(host.max()) < 2**63 else host.astype(object)
    if int(reduced.max()) < 2**63:
        reduced = reduced.astype(np.int64)
    return reduced, np.asarray(offsets)


def _floats_as_integers(arr, xp, requested: str, has_forbidden: bool):
    """Float costs solved as integers (``dtype="int64"``): only when every value is an integer."""
    if has_forbidden:
        raise LapInputError(f"forbidden (infinite) entries need a float working dtype, not {requested}")
    if arr.size and not bool((arr == xp.floor(arr)).all()):
        raise LapInputError(f"costs are not integers, so they cannot be solved as {requested}")
    if arr.size and float(xp.abs(arr).max()) >= 2.0**63:
        raise LapInputError(f"costs do not fit {requested}; use --dtype float64")
    return arr.astype(np.int64)


def _check_exact_in_float(arr, target: str) -> None:
    """Integers solved as floats (``dtype="float32"``): refuse values the float cannot hold."""
    if _always_fits(arr.dtype, np.dtype(target)) or arr.size == 0:
        return
    limit = 2 ** (np.finfo(target).nmant + 1)
    if max(abs(int(arr.min())), abs(int(arr.max()))) > limit:
        raise LapInputError(
            f"integer costs beyond ±{limit} are not exact in {target}; use --dtype int64 or float64"
        )


def _float_work(arr, xp, maximize: bool, k: int, has_forbidden: bool, target: str) -> WorkMatrix:
    """Float work matrix: negated when maximising (exact), cast to ``target`` (float16 widens),
    each row's minimum subtracted (and each column's when square), forbidden entries set to a
    sentinel, then padded. The sentinel (k + 2)·S exceeds S + (k − 1)·S: any assignment through a
    forbidden entry costs more than every assignment of finite reduced costs, so the optimum uses
    one only when it must (then it is infeasible)."""
    finite = xp.isfinite(arr) if has_forbidden else None  # before a narrowing cast can overflow
    values = arr.astype(target, copy=False)
    if maximize:
        values = -values
    n = values.shape[0]
    if has_forbidden:
        if values.dtype.itemsize < arr.dtype.itemsize and not bool((xp.isfinite(values) == finite).all()):
            raise LapInputError(f"costs overflow {target}; use --dtype float64")
        check_feasible(finite, xp)
        row_min = xp.where(finite, values, xp.inf).min(axis=1)
        row_min = xp.where(xp.isfinite(row_min), row_min, 0).astype(values.dtype)
        if values.dtype == np.float32:  # not reduced (see below): the sentinel clears hi + k·(hi − lo)
            lo = float(xp.where(finite, values, xp.inf).min())
            hi = float(xp.where(finite, values, -xp.inf).max())
            finite_spread = max(abs(lo), abs(hi))  # eps follows |c| for float32
            sentinel = values.dtype.type(hi + (k + 2) * max(hi - lo, abs(hi) * 2.0**-20, 1e-30))
            values = xp.where(finite, values, sentinel)
            return _pad(WorkMatrix(values, float_eps(k, finite_spread)), xp, n, k)
        values = values - row_min[:, None]
        finite_spread = float(xp.where(finite, values, 0).max())
        sentinel = values.dtype.type((k + 2) * (finite_spread if finite_spread > 0 else 1.0))
        if not np.isfinite(sentinel):
            raise LapInputError("finite costs span too wide a range to mark forbidden entries")
        values = xp.where(finite, values, sentinel)
    else:
        if values.size and not bool(xp.isfinite(values).all()):
            raise LapInputError(f"costs overflow {target}; use --dtype float64")
        if values.dtype == np.float32:
            # float32 costs are exact float32 numbers, and the kernels compute slack in float64:
            # eps from the magnitude stays far below float32's resolution (2^-24·|c|) for any
            # k < 2^20, while reducing in float32 would round every entry by up to 2^-24·spread.
            scale = float(xp.abs(values).max()) if values.size else 0.0
            return _pad(WorkMatrix(values, float_eps(k, scale)), xp, n, k)
        row_min = values.min(axis=1)
        values = values - row_min[:, None]
    row_offset = _host_float64(row_min, xp)
    col_offset = None
    if n == k and not has_forbidden:  # square: columns too (a padded problem keeps zero rows)
        col_min = values.min(axis=0)
        values = values - col_min[None, :]
        col_offset = _host_float64(col_min, xp)
    # eps follows the finite costs' spread: the sentinel never enters it. The problem is known
    # feasible here, so no optimal assignment and no dual of the solve reaches the sentinel's scale.
    spread = finite_spread if has_forbidden else (float(values.max()) if values.size else 0.0)
    return _pad(WorkMatrix(values, float_eps(k, spread), row_offset, col_offset), xp, n, k)


def check_feasible(finite, xp) -> None:
    """Raise InfeasibleError unless the allowed (finite) pairs hold an assignment of every row of
    the smaller side: a maximum bipartite matching (Hopcroft–Karp, scipy), before any solve."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    mask = finite if xp is np else xp.asnumpy(finite)
    if mask.shape[0] > mask.shape[1]:
        mask = mask.T
    matching = maximum_bipartite_matching(csr_matrix(mask), perm_type="column")
    if bool((matching < 0).any()):
        raise InfeasibleError()


def _host_float64(array, xp) -> np.ndarray:
    host = array if xp is np else xp.asnumpy(array)
    return np.asarray(host, dtype=np.float64)
