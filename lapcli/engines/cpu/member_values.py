"""A ragged batch's member values as the CPU engines give them to scipy: integer members converted
to float64 at once (scipy would convert each in its own call), and the refusal of float members a
row of whose finite costs spans more than float64 holds, where scipy returns a non-optimal answer
without an error (lapcli.work.SPREAD_OVERFLOWS, the work stack's own refusal)."""

from __future__ import annotations

import threading

import numpy as np
from scipy.optimize import linear_sum_assignment  # at import: the worker process loads it before its first request

from ...errors import LapInputError
from ...float64_exact import float64_exact_dtype, float64_exact_magnitude
from ...headroom import headroom_scale_of, largest_finite, with_headroom
from ...work import SPREAD_OVERFLOWS

FLOAT_COPIES_UP_TO = 1 << 22  # a ragged batch's integer entries converted to float64 at once, up to 32 MB
FLOAT64 = np.dtype(np.float64)
JOINED_UP_TO = 1 << 20  # float64 values (8 MB) joined for one scan; more are scanned member by member


def float64_copies(matrices: list) -> list | None:
    """The integer matrices as float64, converted in one pass into this thread's reused buffer, for
    scipy to solve as they are (the views are good until this thread's next call); None when
    float64 might not hold them exactly (lapcli.float64_exact.float64_exact) or they mix dtypes or are
    booleans (each member is then judged alone). Given the integers, scipy converts each member in
    its own call, holding the GIL, and a check a member cost more than the solves: a ragged list of
    1000 small int64 members took 14.8 ms against 8.2 for a scipy loop (2-core CI machine)."""
    if not matrices or len({m.dtype for m in matrices}) != 1 or matrices[0].dtype.kind not in "iu":
        return None
    sizes = [m.size for m in matrices]
    total = sum(sizes)
    if total > FLOAT_COPIES_UP_TO:  # large members: their solves dwarf a check and a conversion each
        return None
    side = max(max(m.shape) for m in matrices)
    flat = _end_to_end(matrices, total)
    if not _exact(flat, matrices[0].dtype, side):
        return None
    ends = np.cumsum(sizes).tolist()
    return [flat[end - m.size:end].reshape(m.shape) for m, end in zip(matrices, ends)]


def integers_exact(matrices: list, rows: np.ndarray, cols: np.ndarray) -> bool:
    """Whether scipy may be given these integer matrices (of ``rows`` × ``cols``) as they are (it
    converts each to float64) and solve them exactly (lapcli.float64_exact.float64_exact): by their dtype
    where its width says so, else by one scan of their values joined as they are (no conversion,
    no copy a member). False where they mix dtypes or are booleans."""
    if not matrices or len({m.dtype for m in matrices}) != 1 or matrices[0].dtype.kind not in "iu":
        return False
    side = int(max(rows.max(), cols.max()))
    return _exact(lambda: joined(matrices, matrices[0].dtype), matrices[0].dtype, side)


def _exact(values, dtype: np.dtype, side: int) -> bool:
    """float64 holds integer costs of ``dtype`` (``values``: them end to end, or a function giving
    them) and their paths' sums on sides up to ``side`` exactly: by the dtype's width, else by the
    values' magnitude (lapcli.float64_exact.float64_exact)."""
    if float64_exact_dtype(dtype, side):
        return True
    values = values() if callable(values) else values
    return not values.size or float64_exact_magnitude(max(-float(values.min()), float(values.max())), side)


def _end_to_end(matrices: list, total: int) -> np.ndarray:
    """The matrices' values end to end as float64 (``total`` of them, at most FLOAT_COPIES_UP_TO)
    in this thread's reused buffer: a view, good until this thread's next call. Fresh pages are
    faulted in once, not every call (a new 3.4 MB array a call cost a ragged list of 1000 members
    more than its concatenation)."""
    buffer = getattr(_FLOAT_BUFFER, "values", None)
    if buffer is None or buffer.size < total:
        grown = 2 * buffer.size if buffer is not None else 0
        buffer = _FLOAT_BUFFER.values = np.empty(min(FLOAT_COPIES_UP_TO, max(total, grown)))
    return np.concatenate([m.ravel() for m in matrices], out=buffer[:total])


def values_end_to_end(matrices: list) -> np.ndarray:
    """All the matrices' values in one float64 array, for one scan of them: this thread's reused
    buffer where they fit it (_end_to_end), else a new concatenation."""
    total = sum(m.size for m in matrices)
    if total <= FLOAT_COPIES_UP_TO:
        return _end_to_end(matrices, total)
    return np.concatenate([m.ravel() for m in matrices]).astype(np.float64, copy=False)


def _finite_spread_fits(values) -> bool:
    with np.errstate(over="ignore", invalid="ignore"):
        lo, hi = values.min(), values.max()
        if not (np.isfinite(lo) and np.isfinite(hi)):  # forbidden entries (±inf), or NaN
            finite = values[np.isfinite(values)]
            if not finite.size:
                return True
            lo, hi = finite.min(), finite.max()
        return bool(np.isfinite(hi - lo))


def check_float_spread(matrices: list) -> None:
    """Refuse float members a row of whose finite float64 costs spans more than float64 holds: the
    work stack's refusal (lapcli.work.SPREAD_OVERFLOWS) for members scipy is given as they are
    (near ±1e308 its sums overflow and it returns an assignment that is not optimal, without an
    error). Non-empty members only. One pass over their values end to end: where their sum of
    squares is finite, every |value| is below 1.4e154 and no spread can overflow (one
    multiply-add a value, against a min and a max); else the exact scan, and each row's only where
    that one is too wide."""
    native = {m.dtype for m in matrices} == {FLOAT64}
    wide = matrices if native else [m for m in matrices if m.dtype.itemsize >= 8]  # float64 and wider
    if not wide:
        return
    values = _float64_end_to_end(wide, native)
    if _spreads_fit(values) or all(_finite_spread_fits(row) for matrix in wide
                                   for row in matrix.astype(FLOAT64, copy=False)):
        return
    raise LapInputError(SPREAD_OVERFLOWS)


def spread_refusal(matrices: list, numbers: list, batch: int) -> str:
    """SPREAD_OVERFLOWS naming the members (``numbers``: theirs, of ``batch``) a row of whose finite
    float64 costs spans more than float64 holds: the words of a refusal, once it is made."""
    from ...errors import members_text

    bad = [b for b, matrix in zip(numbers, matrices) if matrix.dtype.kind == "f" and matrix.size
           and not all(_finite_spread_fits(row) for row in matrix.astype(FLOAT64, copy=False))]
    return f"{members_text(bad, batch)}: {SPREAD_OVERFLOWS}" if bad and batch > 1 else SPREAD_OVERFLOWS


def spread_overflows(values: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> bool:
    """Whether a row of the members whose float64 values lie end to end in ``values`` (member k
    rows[k] × cols[k], row by row) spans more finite values than float64 holds:
    :func:`check_float_spread`'s test, for a ragged batch's share already laid out so."""
    if _spreads_fit(values):
        return False
    widths = np.repeat(cols, rows).tolist()
    ends = np.cumsum(widths).tolist()
    return not all(_finite_spread_fits(values[end - width:end]) for end, width in zip(ends, widths))


def _spreads_fit(values: np.ndarray) -> bool:
    """A sufficient test that no row of ``values`` spans more than float64 holds: their sum of
    squares is finite (every |value| below 1.4e154: one multiply-add a value, against a min and a
    max), or their finite values' spread as one row fits."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.einsum("i,i->", values, values)):  # NaN and ±inf fail it too: the exact scan
            return True
    return _finite_spread_fits(values)


def _float64_end_to_end(matrices: list, native: bool) -> np.ndarray:
    """The float64 matrices' values end to end, in a new array: their bytes joined where all are
    ``native`` float64 and C-contiguous, else concatenated. The join lets go of the GIL once for the
    whole copy where it is large; np.concatenate takes it back after each array, which in the helper
    thread, beside the caller's solves, cost 2.8 ms against 1.2 (1000 members of 1..40 × 1..40).
    Never this thread's reused buffer (_end_to_end): in the caller's thread it holds the integer
    members' float64 copies until they are solved, and writing it there changed their answers."""
    if native:
        return joined(matrices, FLOAT64)
    return np.concatenate([m.ravel() for m in matrices]).astype(FLOAT64, copy=False)


def joined(matrices: list, dtype: np.dtype) -> np.ndarray:
    """The values of matrices all of ``dtype``, end to end in a new array: their bytes joined (one
    copy, which lets go of the GIL where it is large), or concatenated where a member is not
    C-contiguous."""
    try:
        return np.frombuffer(b"".join(matrices), dtype=dtype)
    except (BufferError, ValueError, TypeError):  # a member that is not C-contiguous
        return np.concatenate([m.ravel() for m in matrices]).astype(dtype, copy=False)


_FLOAT_BUFFER = threading.local()  # _end_to_end's buffer: a thread's own, kept between calls


def scipy_form(cost: np.ndarray, maximize: bool, headroom: bool = False) -> np.ndarray:
    """A member as scipy is given it: a float64 one reduced as the work stack reduces a float64
    problem (lapcli.work), each row's least cost subtracted (its largest to maximise), each
    column's where the member is tall, so that scipy compares the costs' spread, not their
    magnitude (1e6 + U(0, 1e-7) as given came back up to 0.8 of the spread off, where the
    matrix's reduced work is solved within its tolerance); the same optimal pairs, since every
    row (of a tall member every column) is assigned once. Other dtypes as they are. A row whose
    least cost is not finite gives NaN, which scipy refuses: the caller then asks scipy about the
    member as given, for its own words (infeasible, or invalid entries): :func:`scipy_answers`.
    ``headroom``: reduced costs near float64's largest are scaled by a power of two
    (lapcli.headroom.with_headroom), where scipy's path sums would overflow (its answer was not optimal)."""
    if cost.dtype != FLOAT64 or not cost.size:
        return cost
    axis = 1 if cost.shape[0] <= cost.shape[1] else 0
    reduced = cost - (cost.max(axis=axis, keepdims=True) if maximize else cost.min(axis=axis, keepdims=True))
    return with_headroom(reduced) if headroom else reduced


def scipy_answers(matrices, maximize: bool) -> list:
    """scipy's (rows, cols) for each member, in order, each given as :func:`scipy_form` makes it;
    where one raises, every member again, each error kept as its answer (the ValueError of the
    member as given: errors are named, not hot). NumPy's warnings of the NaN scipy_form makes of
    inf − inf, or of an overflowing spread (refused after, check_float_spread), are silenced once."""

    def answer(matrix):
        try:
            return linear_sum_assignment(scipy_form(matrix, maximize, headroom), maximize)
        except ValueError:
            pass
        try:  # as given, for scipy's own words: NaN or the wrong infinity, or no finite matching
            return linear_sum_assignment(matrix, maximize)
        except ValueError as error:
            return error

    headroom = _near_the_largest(matrices)
    with np.errstate(invalid="ignore", over="ignore"):
        try:
            return [linear_sum_assignment(scipy_form(matrix, maximize, headroom), maximize) for matrix in matrices]
        except ValueError:
            return [answer(matrix) for matrix in matrices]


def _near_the_largest(matrices) -> bool:
    """Whether a float64 member's reduced costs may reach where scipy's sums overflow (twice the
    largest finite |cost| bounds a reduced one): small members' values end to end in one pass (a
    min and a max a member cost ~1.6 µs each on 200 small members), large ones each in place (no
    copy of them all)."""
    floats = [m for m in matrices if m.dtype == FLOAT64 and m.size]
    if not floats:
        return False
    total = sum(m.size for m in floats)
    parts = [np.concatenate([m.ravel() for m in floats])] if total <= JOINED_UP_TO and len(floats) > 1 else floats
    k = max(max(m.shape) for m in matrices)
    return headroom_scale_of(max(largest_finite(part) for part in parts), 2 * k + 1) != 1.0  # 2·4(k + 1)
