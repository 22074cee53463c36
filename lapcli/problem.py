"""One problem model for a matrix and a stack: validate the costs the way scipy does, check their
entries and feasibility once, build the work the engines solve (lapcli.work), and map answers back.

Everything a user may feed ``scipy.optimize.linear_sum_assignment`` is accepted: lists, NumPy or CuPy arrays (and torch
tensors, through lapcli.arrays), rectangular shapes, bool/int/uint/float dtypes, ``maximize``, and forbidden entries
(``+inf`` when minimising, ``-inf`` when maximising). A (B, n, m) stack holds B such problems; a matrix is the stack of
one (``Problem.stack``), so the entry checks, the feasibility check and the work stack are the same code for both.

Preparing is O(1): shapes and dtypes only. The entries (NaN, infinities) are checked on first need (``has_forbidden``),
where the input lives, or by an engine on its own copy (``check_entries_on``): on the device, not before the upload.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .arrays import Origin, all_true, any_each, as_array, host, native_order, nested_array, tensor_values
from .errors import InfeasibleError, LapInputError, LapTypeError, members_text
from .feasibility import infeasible_members
from .work import Work, WorkMatrix, build_work, float_eps, square_matrix
from .sums import exact_sum
from .work_dtypes import requested_dtype

_ROUNDING = 2.0**-52


def invalid_entries(where: str = "") -> ValueError:
    return LapInputError(f"matrix contains invalid numeric entries{where}")


def check_entries(stack, xp, maximize: bool, single: bool = True) -> np.ndarray:
    """(B,) bool: which problems hold a forbidden entry. Raises scipy's error for NaN or the
    wrong-signed infinity, naming the problems that hold one when ``stack`` is a caller's stack."""
    batch = stack.shape[0]
    if stack.dtype.kind != "f" or stack.size == 0 or all_true(xp.isfinite(stack)):  # the common case: one pass
        return np.zeros(batch, dtype=bool)
    wrong, allowed = (np.inf, -np.inf) if maximize else (-np.inf, np.inf)
    # xp's ufuncs, not `==`: CuPy sends an operator with a number through NumPy's dispatch, whose first
    # call imports cupyx.scipy (0.2-0.3 s of a cold process; tests/test_cupy_imports_gpu.py)
    bad = any_each(xp.isnan(stack) | xp.equal(stack, wrong))
    if bool(bad.any()):
        raise invalid_entries("" if single else f": {members_text(np.flatnonzero(bad), batch)}")
    return any_each(xp.equal(stack, allowed))


def own_forbidden(stack, real: np.ndarray, wide: np.ndarray, maximize: bool) -> np.ndarray:
    """(B,) bool: the members of a packed float stack whose own entries (rows under ``real``,
    columns under ``wide``), not the padding, hold the allowed infinity. One pass where the stack
    lives; the feasibility matchings then run on those members alone (on every member, they took
    ~0.27 ms each: 1000 small members 270 ms, against 10 ms for a scipy loop; H200 host)."""
    xp = np if isinstance(stack, np.ndarray) else sys.modules["cupy"]  # a CuPy stack: CuPy is loaded
    x = xp.arange(stack.shape[1])[None, :, None]
    y = xp.arange(stack.shape[2])[None, None, :]
    own = (x < xp.asarray(real)[:, None, None]) & (y < xp.asarray(wide)[:, None, None])
    allowed = -np.inf if maximize else np.inf
    return any_each(xp.equal(stack, allowed) & own)


@dataclass
class Problem:
    """Validated costs (a matrix or a stack) and everything needed to solve them and map back."""

    original: Any  # the validated 2-D or 3-D array (NumPy or CuPy), never modified
    xp: Any
    maximize: bool
    requested_dtype: str | None = None
    origin: Origin | None = None  # where results go back (None: as NumPy, or CuPy for CuPy input)
    forbidden: np.ndarray | None = None  # (B,) bool per problem; None: the entries are not checked yet
    # (B,) bool: the only problems whose feasibility needs a matching (a ragged stack's padding is
    # forbidden but never makes a member infeasible: lapcli.ragged.pack); None: all that hold a forbidden entry
    maybe_infeasible: np.ndarray | None = None
    _works: dict = field(default_factory=dict, repr=False)
    caps: dict = field(default_factory=dict, repr=False)  # square work or not → its reduced costs' cap (cost_cap)
    cap_rounds: int = field(default=0, repr=False)  # the solves on capped work so far
    set_up: dict = field(default_factory=dict, repr=False)  # one-off imports of its checks (import_ms): not the solve's
    shape: tuple[int, int, int] = field(init=False, repr=False)  # (B, n, m); a matrix: (1, n, m)

    def __post_init__(self) -> None:
        shape = self.original.shape  # NumPy and CuPy give Python ints
        self.shape = (shape[0], shape[1], shape[2]) if len(shape) == 3 else (1, shape[0], shape[1])

    # -------------------------------------------------------------------------- shape
    @property
    def is_stack(self) -> bool:
        return self.original.ndim == 3

    @property
    def stack(self):
        """The (B, n, m) view: a matrix is the stack of one."""
        return self.original if self.is_stack else self.original[None]

    @property
    def n_rows(self) -> int:
        return self.shape[1]

    @property
    def n_cols(self) -> int:
        return self.shape[2]

    @property
    def transposed(self) -> bool:
        """True when the work is built from the transpose (more rows than columns)."""
        return self.n_rows > self.n_cols

    @property
    def size(self) -> int:
        """k, the side of the square work matrix (columns of the work stack)."""
        return max(self.n_rows, self.n_cols)

    @property
    def is_empty(self) -> bool:
        return 0 in self.shape

    # -------------------------------------------------------------------------- entries
    @property
    def has_forbidden(self) -> bool:
        """Whether an entry is forbidden; checks the entries where the input lives (scipy's errors
        for NaN or the wrong infinity) and the feasibility of each problem holding one, if nobody has."""
        if self.forbidden is None:
            self.check_entries_on(self.stack, self.xp)
        return bool(self.forbidden.any())

    def check_entries_on(self, copy, xp) -> None:
        """Check the entries on ``copy``, the stack already copied to module ``xp`` (the GPU: one pass
        at device bandwidth), unless done already; then raise InfeasibleError for any problem whose
        allowed pairs hold no assignment."""
        if self.forbidden is not None:
            return
        if copy.ndim == 2:
            copy = copy[None]
        forbidden = check_entries(copy, xp, self.maximize, single=not self.is_stack)
        suspects = forbidden if self.maybe_infeasible is None else forbidden & self.maybe_infeasible
        bad = infeasible_members(copy, suspects, self.maximize, xp, self.set_up)
        if bad:
            raise InfeasibleError() if not self.is_stack else InfeasibleError(
                f"cost matrix is infeasible: {members_text(bad, self.shape[0])}")
        self.forbidden = forbidden

    # -------------------------------------------------------------------------- work
    def work_stack(self, xp=None, source=None, *, square: bool = False, unchecked: bool = False) -> Work:
        """The work stack built with array module ``xp`` (default: where the input lives), from
        ``source`` (the stack already copied to that module, e.g. uploaded). Built once per module.
        ``unchecked``: an engine that detects non-finite entries itself takes the work of entries
        nobody has checked yet as if they were finite (not kept: the checked work may differ)."""
        xp = xp or self.xp
        key = (xp.__name__, square)
        if key not in self._works:
            if source is None:
                source = self.stack if xp is self.xp else _to_module(self.stack, xp)
            elif source.ndim == 2:
                source = source[None]
            given = dict(maximize=self.maximize, requested=self.requested_dtype, square=square)
            if unchecked and self.forbidden is None:
                return build_work(source, xp, forbidden=None, cap=self.caps.get(square), **given)
            self.check_entries_on(source, xp)
            self._works[key] = build_work(source, xp, forbidden=self.forbidden, cap=self.caps.get(square), **given)
        return self._works[key]

    def cap_work(self, square: bool, cap: float) -> None:
        """The work built again with its reduced float costs capped at ``cap`` (lapcli.cost_cap)."""
        self.caps[square] = cap
        self.cap_rounds += 1
        self._works.clear()

    def work_on(self, xp=None, source=None) -> WorkMatrix:
        """The square k×k work matrix of a single problem (the Hungarian engines' adapter)."""
        return square_matrix(self.work_stack(xp, source, square=True), xp or self.xp)

    def notes(self) -> list[str]:
        """What building the work noted (e.g. a fallback to float64), once."""
        return list(dict.fromkeys(note for work in self._works.values() for note in work.notes))

    @property
    def eps(self) -> float:
        """Zero tolerance of a single problem's reduced costs: 0 for integers."""
        return self.work_on().eps

    # -------------------------------------------------------------------------- back to the caller
    def assignment_from_work(self, col_of_row) -> tuple[np.ndarray, np.ndarray]:
        """Map a permutation of the square work matrix back to (row_ind, col_ind) of the original:
        padded rows dropped, the transpose undone, sorted by row as scipy does."""
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
        """The work matrix's duals (host arrays of k) as duals of the caller's matrix: the offsets of
        the reduction added back, padding dropped, transpose and maximize's negation undone. For a
        minimisation cost − u − v ≥ 0 with equality on the assignment; ≤ 0 when maximising.
        Integer duals are exact: int64 where they fit, else shifted by one constant (u + t, v − t:
        the same proof) into int64 where that fits them both, else Python ints (an object array)."""
        offsets = (work.row_offset, work.col_offset)
        exact = work.values.dtype.kind in "iu" and all(o is None or o.dtype.kind in "iuO" for o in offsets)
        if exact:
            u, v = np.asarray(u), np.asarray(v)
            widest = sum(0 if a is None or not a.size else max(abs(int(a.min())), abs(int(a.max())))
                         for a in (u, v, *offsets))
            if widest < 2**63 - 1 and all(o is None or o.dtype.kind in "iu" for o in offsets):
                dtype = np.int64  # no sum, difference or negation below can overflow
            else:
                dtype, u, v = object, u.astype(object), v.astype(object)  # Python ints
        else:
            dtype = np.float64
        u = np.asarray(u).astype(dtype)
        v = np.asarray(v).astype(dtype)
        if self.n_rows != self.n_cols and v.size:
            # a square padded with zero rows (no column offsets then): a padding row's pair is tight and
            # its others feasible, so every free column holds the largest v. Moved to 0 (u + s, v − s:
            # the same reduced costs), v ≤ 0 with 0 on the free columns: the rectangular form of the
            # proof (docs/reliability.md). An engine that solves k × m natively has that largest v at 0.
            shift = v.max()
            u, v = u + shift, v - shift
        row_offset = np.zeros(1, dtype) if work.row_offset is None else work.row_offset.astype(dtype)
        col_offset = np.zeros(1, dtype) if work.col_offset is None else work.col_offset.astype(dtype)
        with np.errstate(over="ignore"):
            mapped = u + row_offset, v + col_offset
        if dtype is np.float64 and self.n_rows == self.n_cols and not all(np.isfinite(d).all() for d in mapped):
            # near 1.8e308 a sum passed the range: u + t, v − t (the same proof), t amid where both fit, in halves
            half_u, half_v = u / 2 + row_offset / 2, v / 2 + col_offset / 2
            room = float(np.finfo(np.float64).max) / 2 * (1 - 2.0**-40)
            low = max(-room - float(half_u.min()), float(half_v.max()) - room)
            high = min(room - float(half_u.max()), float(half_v.min()) + room)
            t = (low + high) / 2
            with np.errstate(over="ignore"):
                mapped = 2 * (half_u + t), 2 * (half_v - t)
        u, v = mapped
        if self.transposed:  # work rows are the caller's columns (then padding), work columns its rows
            row_duals, col_duals = v, u[: self.n_cols]
        else:
            row_duals, col_duals = u[: self.n_rows], v
        if self.maximize:
            row_duals, col_duals = -row_duals, -col_duals
        if dtype is object:
            return int64_if_it_fits(row_duals, col_duals, shift=self.n_rows == self.n_cols)
        return row_duals, col_duals

    def values_at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """A single problem's original costs at the given positions, as a host array."""
        matrix = self.stack[0]
        if self.xp is np:
            return np.asarray(matrix[rows, cols])
        return host(matrix[self.xp.asarray(rows), self.xp.asarray(cols)])

    def objective(self, rows: np.ndarray, cols: np.ndarray) -> int | float:
        """Sum of a single problem's chosen costs: exact (Python int) for integers, fsum for floats."""
        total = exact_sum(self.values_at(rows, cols)[None])[0]
        return total.item() if isinstance(total, np.generic) else total  # a Python int or float

    def objectives(self, col_ind) -> np.ndarray:
        """(B,): per problem, the sum of the chosen original costs (``col_ind`` (B, n), −1 for an
        unassigned row): exact for integers, correctly rounded (fsum) for float64."""
        xp = self.xp
        if 0 in self.shape:  # no problem, or problems without a pair: nothing is chosen
            return exact_sum(host(self.xp.zeros(self.shape[:2], dtype=self.stack.dtype)))
        col_ind = xp.asarray(col_ind)
        assigned = xp.greater_equal(col_ind, 0)
        values = xp.take_along_axis(self.stack, xp.where(assigned, col_ind, 0)[:, :, None], axis=2)[:, :, 0]
        zero = 0 if values.dtype.kind in "biu" else 0.0
        return exact_sum(host(xp.where(assigned, values, zero)))


def int64_if_it_fits(u: np.ndarray, v: np.ndarray, shift: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Exact integer duals (object arrays of Python ints) as int64, shifted by the constant t nearest 0 that puts
    u + t and v − t within int64 (c − u − v unchanged; not with ``shift=False``: a rectangle's free v are 0)."""
    if not u.size or not v.size:
        return u.astype(np.int64), v.astype(np.int64)
    low, high = -(2**63), 2**63 - 1
    least = max(low - min(u), max(v) - high)
    most = min(high - max(u), min(v) - low)
    if least > most or (not shift and not least <= 0 <= most):
        return u, v
    shift = min(max(0, least), most)
    return (u + shift).astype(np.int64), (v - shift).astype(np.int64)


def _to_module(array, xp):
    if xp is np:
        return host(array)
    return xp.asarray(array)


def array_module(cost: Any):
    """Return cupy for a CuPy array, numpy otherwise (without importing CuPy needlessly)."""
    if type(cost).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def check_cost_dtype(dtype, values=None, from_list: bool = False) -> None:
    """Refuse costs that are not numbers as scipy does: complex, objects, strings, dates; and
    float128, which no engine holds. ``values``: the array, whose objects or text name the refusal
    better (integers past 64 bits, None, numbers as text). The exception is scipy's: TypeError for
    an array it cannot cast, ValueError where a list (``from_list``) held text or None, which it
    converts, or fails to."""
    if dtype.kind not in "biuf" or dtype.itemsize > 8:
        why, converted = _why_not_numbers(values) if values is not None and dtype.kind in "OUS" else (None, False)
        error = LapInputError if from_list and converted else LapTypeError
        raise error(why or f"Cannot cast array data from {dtype!r} to dtype('float64') according to the rule 'safe'")


def _why_not_numbers(values) -> tuple[str | None, bool]:
    """What a NumPy array of objects or text holds that lapcli's engines do not take, in words, and
    whether scipy would try to convert it (text, None) rather than refuse to cast it."""
    if values.dtype.kind in "US":
        return "costs given as text (e.g. '1'): convert them to numbers first", True
    items = values.ravel().tolist()
    if any(item is None for item in items):
        return "None among the costs: give a number, or inf for a forbidden pair", True
    if any(isinstance(item, str) for item in items):
        return "costs given as text (e.g. '1'): convert them to numbers first", True
    if not items or not all(isinstance(item, (int, float)) for item in items):
        return None, False
    if any(isinstance(item, int) and not -2**63 <= item < 2**64 for item in items):
        return ("integers past 64 bits: lapcli solves integers exactly, in int64 at most; convert them to "
                "float64 yourself if rounding them is acceptable"), False
    return "costs held as Python objects (dtype object): give them as a numeric array", False


def prepare(cost: Any, *, maximize: bool = False, dtype: str | None = None, check: bool = True,
            stack: bool = False) -> Problem:
    """Validate ``cost`` (scipy's checks and messages) and wrap it in a Problem: a matrix, or with
    ``stack`` a (B, n, m) stack (NumPy, CuPy or torch). With ``check=False`` the entries are checked
    later: by the first use of ``has_forbidden`` or by an engine on its own copy."""
    dtype = requested_dtype(dtype)
    # scipy's ValueError for text or None is its conversion of a list (an array it cannot cast: TypeError)
    listed = isinstance(cost, (list, tuple)) and (not stack or all(isinstance(m, (list, tuple)) for m in cost))
    if stack:
        arr, origin = as_array(nested_array(cost) if listed else cost)
        xp = np if isinstance(arr, np.ndarray) else sys.modules["cupy"]  # as_array gave a CuPy array
        if arr.ndim != 3:
            raise LapInputError(f"expected a stack of matrices (3-D array), got a {arr.ndim}-D array")
    else:
        cost = tensor_values(cost)  # a CUDA tensor as CuPy: CuPy answers, as a CPU one gets NumPy's
        xp = array_module(cost)
        arr, origin = nested_array(cost) if listed else xp.asarray(cost), None
        arr = native_order(arr) if xp is np else arr
        if arr.ndim != 2:
            raise LapInputError(f"expected a matrix (2-D array), got a {arr.ndim} array")
    check_cost_dtype(arr.dtype, arr, from_list=listed)
    problem = Problem(original=arr, xp=xp, maximize=bool(maximize), requested_dtype=dtype, origin=origin)
    if check:
        problem.has_forbidden  # noqa: B018 - checks the entries now
    return problem


def objective_tolerance(cost) -> float:
    """How far two objectives of ``cost`` (a matrix) may differ and both be optimal under our
    tolerance: 0 for integers (exact); for floats 2·k·(eps + rounding of the reduction), with eps from
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
    if cost.dtype.itemsize <= 4:  # float32 work is not reduced: eps follows |c|
        spread = largest
    per_entry = float_eps(k, spread) + 2 * _ROUNDING * spread
    summation = 2 * _ROUNDING * k * largest  # each fsum is within half an ulp of |objective| ≤ k·max|c|
    return 2 * k * per_entry + summation
