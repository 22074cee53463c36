"""The work stack: the one place where a caller's costs become what the engines minimise.

Every engine solves a (B, r, c) stack of finite costs to MINIMISE, with r ≤ c. A single matrix is a
batch of one; the Hungarian engines, which need a square matrix, get :func:`square_matrix` of it.
The rules, each applied here once, with one array-module parameter (NumPy or CuPy), so that the
CPU engines exercise the same code as the GPU ones:

* **transpose** a tall problem (more rows than columns), so that r ≤ c;
* **negate** to maximise (min of −C is max of C), exactly: integers in int64;
* **dtype**: integers stay exact (int32 when they fit, else int64) while the int64 duals cannot
  overflow — (k + 1)·max|c| below 2^62, after exact reductions if needed — and are refused
  otherwise (TooWideError); floats stay float32 or become float64; a requested dtype is honoured
  or refused, never changed silently;
* **reduce** float64 rows by their minimum (and columns, for a square problem), so that the numbers
  the solvers compare are the spread of the costs, not their magnitude (``1e6 + U(0, 1e-7)`` becomes
  ``U(0, 1e-7)`` exactly: Sterbenz). float32 costs are exact float32 numbers and stay unreduced: the
  kernels compute slack in float64. The offsets are kept and added back to the duals;
* **forbidden** entries (+inf minimising, −inf maximising) become a per-problem finite sentinel
  larger than any finite assignment can cost, once the pipeline has proved each problem feasible.

The float tolerance (one definition: engines, certificate, bench, fuzzer, tests): a reduced cost is zero when
at most ``eps = k · S · 2^-50``, S the reduced costs' span (``Work.scale``; lapcli/certificate.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from .arrays import all_true, any_each, host
from .errors import LapInputError, TooWideError, members_text
from .work_dtypes import check_exact_in_float, check_integral_arithmetic, floats_as_integers


# Integer duals and slacks live in int64, within a small multiple of (k + 1) · max|cost|: exact below 2^62.
INT64_SAFE = 2**62
_FLOAT_EPS_FACTOR = 2.0**-50  # eps = k · S · 2^-50
_PLAIN = {np.dtype(np.int32): "int32", np.dtype(np.float32): "float32"}  # solved as given


@lru_cache(maxsize=None)
def dtype_name(dtype) -> str:
    """``dtype.name``, cached: NumPy computes it in Python on every access (~2 us)."""
    return np.dtype(dtype).name


def float_eps(k: int, spread: float) -> float:
    """The zero tolerance of a k-column float work problem whose reduced costs lie in [0, spread]."""
    return k * (max(spread, np.finfo(np.float64).tiny) * _FLOAT_EPS_FACTOR)  # scaled first: k·S may overflow


@dataclass
class Work:
    """The (B, r, c) stack (r ≤ c) the engines minimise, and how its answers map back.

    ``row_offset`` (B, r) and ``col_offset`` (B, c), in the array module of ``values`` (or None for
    zeros), are what the reduction subtracted: objective = sign · (Σ work + Σ offsets), and the
    duals of the work plus the offsets are the duals of the sign-adjusted problem. ``scale`` (B,)
    host float64, where known, is the magnitude each problem's tolerance follows (float work)."""

    values: Any
    sign: int = 1
    row_offset: Any = None
    col_offset: Any = None
    scale: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    integral: bool = False  # integers solved as floats, asked for: exact arithmetic, distinct totals 1 apart
    _tolerances: dict = field(default_factory=dict, init=False, repr=False, compare=False)  # eps(b), once each

    @property
    def dtype(self) -> str:
        return dtype_name(self.values.dtype)

    @property
    def exact(self) -> bool:
        return self.values.dtype.kind in "iu"

    def eps(self, b: int = 0) -> float:
        """Problem b's zero tolerance: 0 for integers, float_eps of its scale for floats."""
        if self.exact:
            return 0.0
        if b not in self._tolerances:  # a pass over the problem where no scale is kept: asked for a few times
            scale = self.scale[b] if self.scale is not None else _magnitude(self.values[b], self.row_offset is None)
            eps = float_eps(self.values.shape[2], float(scale))
            self._tolerances[b] = min(eps, 0.25) if self.integral else eps  # below half the gap of two integer totals
        return self._tolerances[b]


def _magnitude(values, unreduced: bool) -> float:
    """What a float problem's tolerance follows: max |c| unreduced (float32), else the spread."""
    if values.size == 0:
        return 0.0
    return float(abs(values).max()) if unreduced else float(values.max())


def build_work(stack, xp, *, maximize: bool, forbidden, requested: str | None, square: bool,
               cap: float | None = None) -> Work:
    """The work stack of ``stack`` (B, n, m): transposed, negated, in its working dtype, reduced
    and sentinel-filled as the module docstring says. ``forbidden`` (B,) bool: which problems hold
    forbidden entries (checked and proved feasible by the caller), or None when nobody has checked
    the entries (an engine that detects non-finite values itself: they are then left as they are);
    ``square``: the problem will be padded to a square (the Hungarian engines), so a square float64
    problem's columns are reduced too. ``cap``: reduced float64 costs above it lowered to it, for a
    problem whose found assignment proves no optimum takes them (lapcli.cost_cap)."""
    arr = stack.transpose(0, 2, 1) if stack.shape[1] > stack.shape[2] else stack
    any_forbidden = bool(forbidden.any()) if forbidden is not None else False
    if (not maximize and not any_forbidden and arr.dtype in _PLAIN and requested in (None, _PLAIN[arr.dtype])
            and arr.flags.c_contiguous and cap is None):
        return Work(arr)  # already its own work stack: no copy (a small batch's whole call is ~0.1 ms)
    if arr.dtype.kind == "f" and requested is not None and requested.startswith("int"):
        arr = floats_as_integers(arr, xp, requested, any_forbidden)
    sign = -1 if maximize else 1
    if arr.dtype.kind in "biu" and (requested is None or requested.startswith("int")):
        work = _integer_work(arr, xp, maximize, requested)
        if work is not None:
            work.sign = sign
            return work
        raise TooWideError(f"{_too_wide_members(arr, xp, maximize)}integer costs span too wide a range "
                           f"for exact int64 duals at n={arr.shape[2]}, even reduced (spread · 4(n+1) ≥ 2^62); "
                           "lapcli does not round integers: narrow their range, or convert them to float64 yourself")
    narrow = arr.dtype.kind == "f" and arr.dtype.itemsize <= 4 and cap is None  # capped: reduced in float64, exactly
    target = requested or ("float32" if narrow else "float64")
    if arr.dtype.kind in "biu":
        check_exact_in_float(arr, target)
    work = _float_work(arr, xp, maximize, any_forbidden, target, square, forbidden is not None, cap,
                       widen=requested is None)
    work.sign = sign
    if arr.dtype.kind in "biu" and work.values.size:
        check_integral_arithmetic(work, xp)
    if arr.dtype.kind == "f" and np.dtype(target).itemsize < arr.dtype.itemsize and arr.size:
        with np.errstate(over="ignore"):
            rounded = bool((arr.astype(target).astype(arr.dtype) != arr).any())
        if rounded:  # asked for: say so, since the certificate proves the rounded costs' optimum
            work.notes.append(f"{arr.dtype} costs rounded to {target}, {ROUNDED_AS_ASKED} (the objective sums the given ones)")
    return work


ROUNDED_AS_ASKED = "as asked: the assignment and its certificate are the rounded costs'"  # a work note's words
SPREAD_OVERFLOWS = ("the costs' spread (a row's max − min) overflows float64, so lapcli cannot reduce them; "
                    "scale them down")


def _too_wide_members(arr, xp, maximize: bool) -> str:
    """"problems 3, 4 of 5: " for a stack whose integer work is refused, "" for one problem: halves
    judged as stacks (refused where a member is), down to the members, until 21 are found."""
    refused: list[int] = []

    def search(lo: int, hi: int) -> None:
        if len(refused) > 20 or _integer_work(arr[lo:hi], xp, maximize, None) is not None:  # exactness alone
            return
        if hi - lo == 1:
            return refused.append(lo)
        for half in ((lo, (lo + hi) // 2), ((lo + hi) // 2, hi)):
            search(*half)

    for half in ((0, arr.shape[0] // 2), (arr.shape[0] // 2, arr.shape[0])) if arr.shape[0] > 1 else ():
        search(*half)  # the halves: the whole stack's work was just built and refused
    return _named(refused, arr.shape[0]) if refused else ""


def _named(indices, batch: int) -> str:
    """"problems 1, 4 of 9: " before a stack's refusal; "" for one problem."""
    return f"{members_text(indices, batch)}: " if batch > 1 else ""


def _integer_work(arr, xp, maximize: bool, requested: str | None) -> Work | None:
    """Exact integer work, or None when even the row-reduced integers could overflow the int64
    duals (the caller then refuses them: TooWideError). A requested int dtype that cannot hold the
    values is an error, never a silent change."""
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int8)
    if maximize:
        negated = _negate_exactly(arr)
        if negated is None:  # −2^63, or uint64 ≥ 2^63: subtract from the row maxima instead
            return _reduced_integer_work(arr, xp, True, requested)
        arr = negated
    if arr.size == 0:
        return Work(xp.ascontiguousarray(arr.astype(requested or "int32")))
    if arr.dtype.itemsize <= 4 and arr.dtype != np.uint32:
        target = requested or "int32"  # |cost| < 2^31: duals within 4·(k+1)·2^31 < 2^62 for k ≤ 2^28
        return Work(xp.ascontiguousarray(arr.astype(target, copy=False)))
    k = arr.shape[2]
    lo, hi = int(arr.min()), int(arr.max())
    if max(abs(lo), abs(hi)) * 4 * (k + 1) >= INT64_SAFE:
        return _reduced_integer_work(arr, xp, False, requested)
    what = "the costs negated to maximise" if maximize else "costs"
    return Work(xp.ascontiguousarray(arr.astype(_integer_target(lo, hi, requested, what), copy=False)))


def _integer_target(lo: int, hi: int, requested: str | None, what: str = "costs") -> str:
    """The int dtype of work in [lo, hi] (``what``, as a refusal names them): ``requested``, else int32."""
    target = requested or ("int32" if -(2**31) <= lo and hi < 2**31 else "int64")
    info = np.iinfo(target)
    if lo < info.min or hi > info.max:
        raise LapInputError(f"{what} lie in [{lo}, {hi}] and do not fit {target}; ask for dtype int64 or float64")
    return target


def _reduced_integer_work(arr, xp, maximize: bool, requested: str | None) -> Work | None:
    """Each row's minimum subtracted exactly (maximising: each cost subtracted from its row's
    maximum, which folds the negation in), in unsigned 64-bit arithmetic: the differences are exact
    modulo 2^64 and lie in [0, 2^64). The offsets (host, int64 or Python ints) are what was
    subtracted, signed so that objective = sign · (Σ work + Σ offsets). None when even the reduced
    integers could overflow the int64 duals (the caller then solves in float64)."""
    r, k = arr.shape[1], arr.shape[2]
    reference = arr.max(axis=2) if maximize else arr.min(axis=2)
    unsigned, base = arr.astype(np.uint64), reference.astype(np.uint64)[:, :, None]
    reduced = base - unsigned if maximize else unsigned - base
    hi = int(reduced.max())
    col_offset = None
    if hi * 4 * (k + 1) >= INT64_SAFE and r == k:  # square: every column is assigned, reduce them too
        col_min = reduced.min(axis=1)
        reduced = reduced - col_min[:, None, :]  # both in [0, 2^64): exact
        hi = int(reduced.max())
        col_offset = _int_offsets(host(col_min).astype(object))  # subtracted from the sign-folded work
    if hi * 4 * (k + 1) >= INT64_SAFE:
        return None
    references = host(reference).astype(object)
    offsets = _int_offsets(-references if maximize else references)  # objective = sign · (Σ work + Σ offsets)
    target = _integer_target(0, hi, requested, "the costs, reduced exactly,")
    return Work(xp.ascontiguousarray(reduced.astype(target)), row_offset=offsets, col_offset=col_offset)


def _int_offsets(values: np.ndarray) -> np.ndarray:
    """Offsets as int64 where they fit, else the Python ints they are (an object array)."""
    return values.astype(np.int64) if all(-(2**63) <= int(o) < 2**63 for o in values.flat) else values


def _negate_exactly(arr):
    """−arr in int64, or None when a value has no int64 negation (−2^63, or uint64 ≥ 2^63)."""
    if arr.dtype.itemsize == 8 and arr.size and (int(arr.max()) >= 2**63 if arr.dtype == np.uint64 else
                                                 arr.dtype == np.int64 and int(arr.min()) == -(2**63)):
        return None
    return -arr.astype(np.int64)


def _float_work(arr, xp, maximize: bool, any_forbidden: bool, target: str, square: bool, checked: bool,
                cap: float | None = None, widen: bool = False) -> Work:
    """Float work: negated when maximising (exact), cast to ``target`` (float16 widens), float64
    rows reduced (and columns when ``square`` and r == c, without forbidden entries), forbidden
    entries set to each problem's sentinel. The sentinel exceeds what any assignment of finite
    reduced costs can cost, so the optimum of a feasible problem never takes one. ``widen``: float32
    work whose sentinel passes float32's range (FLT_MAX as a large cost beside +inf) is float64 work
    instead (float32 asked for: refused)."""
    finite = xp.isfinite(arr) if any_forbidden else None  # before a narrowing cast can overflow
    with np.errstate(over="ignore"):  # an overflow of the cast is checked below, and refused
        values = arr.astype(target, copy=False)
    if maximize:
        values = -values
    batch, r, k = values.shape
    if not any_forbidden:
        # the caller checked the entries finite: only a narrowing cast can have made an infinity
        if (checked and values.size and values.dtype.itemsize < arr.dtype.itemsize
                and not all_true(xp.isfinite(values))):
            raise LapInputError(f"costs overflow {target}; ask for dtype float64")
        if values.dtype == np.float32:  # eps follows |c| (see the module docstring)
            return Work(xp.ascontiguousarray(values))
        row_min = values.min(axis=2)
        with np.errstate(over="ignore", invalid="ignore"):
            reduced = values - row_min[:, :, None]  # a new array: the column reduction goes in place
            col_min = None
            if square and r == k:
                col_min = reduced.min(axis=1)
                reduced -= col_min[:, None, :]
        # reduced costs are >= 0 and the entries finite: an overflow shows as +inf in the maximum
        if checked and reduced.size and not bool(xp.isfinite(reduced.max())):
            raise LapInputError(_named(np.flatnonzero(any_each(xp.logical_not(xp.isfinite(reduced)))), batch)
                                + SPREAD_OVERFLOWS)
        if cap is not None:
            xp.minimum(reduced, cap, out=reduced)
        return Work(xp.ascontiguousarray(reduced), row_offset=row_min, col_offset=col_min)
    if values.dtype.itemsize < arr.dtype.itemsize and not all_true(xp.isfinite(values) == finite):
        raise LapInputError(f"costs overflow {target}; ask for dtype float64")
    notes = []
    needs = any_each(xp.logical_not(finite))  # the members holding forbidden entries: only theirs take a sentinel
    lo = xp.where(finite, values, xp.inf).min(axis=(1, 2))
    hi = xp.where(finite, values, -xp.inf).max(axis=(1, 2))
    lo, hi = xp.where(xp.isfinite(lo), lo, 0), xp.where(xp.isfinite(hi), hi, 0)
    if values.dtype == np.float32:  # unreduced: the sentinel clears hi + k·(hi − lo)
        hi64, lo64 = hi.astype(np.float64), lo.astype(np.float64)
        width = xp.maximum(xp.maximum(hi64 - lo64, xp.multiply(abs(hi64), 2.0**-20)), 1e-30)
        sentinel = hi64 + (k + 2) * width
        if not (host(xp.greater(sentinel, float(np.finfo(np.float32).max))) & needs).any():
            sentinel = xp.where(xp.asarray(needs), sentinel, hi64)
            sentinel = sentinel.astype(values.dtype)
            scale = host(xp.maximum(abs(lo), abs(hi))).astype(np.float64)
            return Work(xp.ascontiguousarray(xp.where(finite, values, sentinel[:, None, None])), scale=scale)
        if not widen:
            raise LapInputError("float32 costs span too wide a range to mark forbidden entries; ask for dtype float64")
        values = values.astype(np.float64)  # exact: the float64 work below
        notes.append("float32 costs solved as float64: a sentinel above them for the forbidden entries "
                     "passes float32's range")
    row_min = xp.where(finite, values, xp.inf).min(axis=2)
    row_min = xp.where(xp.isfinite(row_min), row_min, 0).astype(values.dtype)
    with np.errstate(over="ignore"):  # a spread past the range: the sentinel below is refused
        values = values - row_min[:, :, None]
    spread = xp.where(finite, values, 0).max(axis=(1, 2))
    if cap is not None:  # the forbidden entries' sentinel follows the capped spread
        values, spread = xp.minimum(values, cap), xp.minimum(spread, cap)
    if (overflows := ~host(xp.isfinite(spread))).any():  # (entries checked: forbidden ones are known)
        raise LapInputError(_named(np.flatnonzero(overflows), batch) + SPREAD_OVERFLOWS)
    with np.errstate(over="ignore"):  # an overflow is refused below
        sentinel = (k + 2) * xp.where(xp.greater(spread, 0), spread, 1.0)
    if (wide := ~host(xp.isfinite(sentinel)) & needs).any():
        raise TooWideError(_named(np.flatnonzero(wide), batch) + "finite costs span too wide a range to mark forbidden "
                           "entries: (k + 2) times their spread passes float64's; scale them down")
    sentinel = xp.where(xp.asarray(needs), sentinel, 1.0)  # unused where nothing is forbidden
    values = xp.where(finite, values, sentinel.astype(values.dtype)[:, None, None])
    return Work(xp.ascontiguousarray(values), row_offset=row_min, scale=host(spread).astype(np.float64), notes=notes)


@dataclass
class WorkMatrix:
    """One problem of a work stack as the square k×k matrix the Hungarian engines solve: the r real
    rows, then k − r rows of zeros (a padded row may take any column at no cost, so the real rows
    get exactly scipy's min(n, m) pairs). Offsets are host arrays of k (or None for zeros)."""

    values: Any
    eps: float
    row_offset: np.ndarray | None = None
    col_offset: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def dtype(self) -> str:
        return dtype_name(self.values.dtype)

    @property
    def exact(self) -> bool:
        """Integer work: solved in integers, certified exactly (eps 0)."""
        return self.values.dtype.kind in "iu"


def square_matrix(work: Work, xp) -> WorkMatrix:
    """The square adapter: problem 0 of ``work`` padded with zero rows to k × k."""
    values = work.values[0]
    r, k = values.shape
    row_offset = None if work.row_offset is None else host(work.row_offset[0])
    if r < k:
        padded = xp.zeros((k, k), dtype=values.dtype)
        padded[:r] = values
        values = padded
        if row_offset is not None:
            row_offset = np.concatenate([row_offset, np.zeros(k - r, row_offset.dtype)])
    col_offset = None if work.col_offset is None else host(work.col_offset[0])
    return WorkMatrix(xp.ascontiguousarray(values), work.eps(0), row_offset, col_offset, list(work.notes))
