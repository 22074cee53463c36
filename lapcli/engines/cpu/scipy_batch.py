"""Engine ``scipy-batch``: scipy's linear_sum_assignment per problem of the work stack, over a
thread pool (scipy releases the GIL while it solves, so the problems of a stack run on every core).

It solves the same work stack as the GPU batch engine (lapcli.work: tall problems transposed,
negated to maximise, floats reduced, forbidden entries at a sentinel) and maps the answers back
with the same rule, so the CPU tests guard those rules on every machine. No duals.

scipy computes in float64: a problem whose integer work is too wide for that to be exact is
reduced exactly first (lapcli.work.reduced_for_float64), or, when even that is too wide, solved by
the NumPy twin of the batch kernel (lapcli.twins.reference_stack: shortest augmenting paths with
exact int64 duals).
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from ...arrays import host
from ...errors import LapInputError
from ...twins import reference_stack
from ...work import (
    SPREAD_OVERFLOWS,
    float64_exact,
    float64_exact_dtype,
    float64_exact_magnitude,
    float64_solvable,
)
from ..base import BatchEngineResult
from .member_threads import helpers, solve_members

# Below this many entries a problem's Python-side overhead (which holds the GIL) outweighs the
# solve (which releases it), and below THREADS_FROM entries in all the pool's start does: such
# stacks run in the caller's thread. 2-core CI machine, ms serial / 2 threads: 20000 × 4 × 4
# 16.9 / 32.2, 20000 × 8 × 8 33.6 / 33.1, 4000 × 24 × 24 43.8 / 24.2, 1000 × 64 × 64 78.6 / 39.3;
# 40 × 16 × 16 0.17 / 0.36, 200 × 16 × 16 1.02 / 0.90. (A ragged batch: run_members.)
SERIAL_BELOW = 12 * 12
THREADS_FROM = 64 * 1024
MEMBER_THREADS_FROM = 256  # a ragged batch's members solved as they are: two threads from here
FLOAT_COPIES_UP_TO = 1 << 22  # a ragged batch's integer entries converted to float64 at once, up to 32 MB
FLOAT64 = np.dtype(np.float64)
CPUS = os.cpu_count() or 1  # read once: a call costs ~10 µs, a quarter of a small stack's call


def _objectives(sums: list) -> np.ndarray:
    """The members' sums as one array: float64 where one is a float, int64 for integers, or the
    Python ints they are where one passes int64 (np.array then gives uint64, or rounds them all to
    float64). Only a float64 result is scanned, and that scan stops at its first float."""
    array = np.array(sums)
    if array.dtype == np.int64 or not sums or (array.dtype == np.float64 and any(type(x) is float for x in sums)):
        return array
    return np.array(sums, dtype=object)


def caller_columns(col_of_row: np.ndarray, n: int, m: int) -> np.ndarray:
    """(B, n) the caller's column of each row from the work stack's (B, r) column of each row:
    the same where the work is the stack itself (n ≤ m), else (a transposed, tall problem) the
    work's rows are the caller's columns, and rows nobody took stay −1."""
    batch = col_of_row.shape[0]
    if n <= m:
        return col_of_row
    col_ind = np.full((batch, n), -1, dtype=np.int64)
    np.put_along_axis(col_ind, col_of_row, np.broadcast_to(np.arange(m), (batch, m)), axis=1)
    return col_ind


def exactly(cost: np.ndarray) -> np.ndarray:
    """The column of each row of one integer work problem too wide for float64 as given."""
    solvable = float64_solvable(cost, maximize=False)
    if solvable is not None:
        return scipy_lsa(solvable[0])[1]
    return reference_stack(cost[None])[0][0]


def run_batch(problem, *, timeout=None, device=None) -> BatchEngineResult:
    batch, n, m = problem.shape
    r, c = min(n, m), max(n, m)
    col_of_row = np.empty((batch, r), dtype=np.int64)
    workers = min(CPUS, batch)
    if workers <= 1 or r * c < SERIAL_BELOW or batch * r * c < THREADS_FROM:
        workers = 1
    begin = time.perf_counter()
    if workers == 1 or problem.xp is not np:  # the work built once, in this thread
        work = problem.work_stack(np)

        def solve(start: int, stop: int):
            _solve_range(work.values[start:stop], col_of_row, start)
            return work
    else:
        # each thread builds the work of its own share (NumPy lets go of the GIL in the reductions
        # and the copy) once the entries are checked here: built whole in one thread, it was ~14 ms
        # of the ~60 a call on 4000 × 24 × 24 float64 took (2-core CI machine)
        problem.check_entries_on(problem.stack, np)

        def solve(start: int, stop: int):
            share = _share_work(problem, start, stop)
            _solve_range(share.values, col_of_row, start)
            return share
    works = [solve(0, batch)] if workers == 1 else _shared(workers, batch, solve)
    details = {"threads": workers, "solve_ms": round((time.perf_counter() - begin) * 1e3, 3)}
    col_ind = caller_columns(col_of_row, n, m)
    col_ind = col_ind if problem.xp is np else problem.xp.asarray(col_ind)
    device = f"cpu ({workers} thread{'' if workers == 1 else 's'})"
    dtype = max((work.dtype for work in works), key=lambda d: np.dtype(d).itemsize)
    notes = list(dict.fromkeys(note for work in works for note in work.notes))
    return BatchEngineResult(col_ind=col_ind, device=device, dtype=dtype, details=details, notes=notes)


def _shared(workers: int, batch: int, solve) -> list:
    """``solve(start, stop)`` on one contiguous share per thread: the first in this one, the others
    in the helpers; their results in order (a helper's error is raised here)."""
    chunk = -(-batch // workers)
    shares = [helpers(CPUS).submit(solve, start, min(batch, start + chunk)) for start in range(chunk, batch, chunk)]
    first = solve(0, min(batch, chunk))
    return [first] + [share.result() for share in shares]


def _share_work(problem, start: int, stop: int):
    """The work stack of problems ``start:stop`` alone, as Problem.work_stack builds the whole."""
    from ...work import build_work

    return build_work(problem.stack[start:stop], np, maximize=problem.maximize,
                      forbidden=problem.forbidden[start:stop], requested=problem.requested_dtype, square=False)


def _solve_range(values: np.ndarray, col_of_row: np.ndarray, start: int) -> None:
    """scipy's column of each row of the work problems ``values`` (the batch's from ``start``) into
    ``col_of_row``: r ≤ c, so every work row is assigned, in order."""
    exact = float64_exact(values)
    for k in range(values.shape[0]):
        col_of_row[start + k] = scipy_lsa(values[k])[1] if exact else exactly(values[k])


def run_members(members, *, maximize: bool, objectives: bool = True, pairs: bool = False, flat: bool = False,
                timeout: float | None = None, dtype: str | None = None,
                device: int | None = None) -> BatchEngineResult | None:
    """A ragged batch (lapcli.ragged.Members), each member solved by scipy as it is: no padding,
    which would only add work on the CPU. From MEMBER_THREADS_FROM members that scipy solves as
    they are (floats, and integers float64 holds exactly) their large ones are shared with a
    helper thread (lapcli.engines.cpu.member_threads). Bad entries and infeasible members are
    named. ``objectives=False``: the members' sums are skipped (``objectives`` None). ``flat``: a
    host list's columns come back as one array per member (``columns``; ``col_ind`` None), not
    scattered into a padded (B, n) array only to be cut up again. ``pairs``, ``timeout`` and
    ``device`` are the engines' one interface: the pipeline makes the pairs from the columns, scipy
    has no time limit and runs here. A requested ``dtype`` declines (None): the pipeline packs the
    members into one stack, whose work honours or refuses it."""
    if dtype is not None:
        return None
    from ...errors import InfeasibleError
    from ...problem import exact_total, float_sum, invalid_entries, members_text

    batch = len(members)
    sums = [0] * batch
    host_list = members.flat is None and members.xp is np
    costs = members.arrays if host_list else [host(members.member(b)) for b in range(batch)]
    begin = time.perf_counter()
    direct, integers = [], []  # members scipy solves as they are; integers that may need more
    dtypes = {cost.dtype for cost in costs}
    if len(dtypes) == 1:  # one dtype: the empty members told from the sizes (~0.1 ms for 1000 members)
        sizes = members.rows * members.cols
        kind = next(iter(dtypes)).kind
        for b in np.flatnonzero(sizes == 0).tolist():
            sums[b] = 0.0 if kind == "f" else 0
        (direct if kind == "f" else integers).extend(np.flatnonzero(sizes).tolist())
    else:
        for b, cost in enumerate(costs):
            if cost.size == 0:
                sums[b] = 0.0 if cost.dtype.kind == "f" else 0
            else:
                (direct if cost.dtype.kind == "f" else integers).append(b)
    floats = [costs[b] for b in direct]  # what the work stack refuses, scipy would get wrong: refused
    solved_as = costs  # what scipy is given for each member
    as_floats = float64_copies([costs[b] for b in integers])
    if as_floats is not None:
        solved_as = list(costs)
        for b, values in zip(integers, as_floats):
            solved_as[b] = values
        direct, integers = sorted(direct + integers), []
    answers = [None] * batch  # (rows, cols), or the ValueError scipy raised
    check = (lambda: _check_float_spread(floats)) if floats else None  # by solve_members: in the helper if it can
    if integers and check is not None:  # solved one by one here first: the refusal comes before them
        check()
        check = None
    refused = None  # lapcli's refusal of a member too wide even for exact int64 duals (not scipy's error):
    for b in integers:  # raised after invalid entries and infeasibility, in a stack's order
        try:
            answers[b] = _integer_member(costs[b], maximize)
        except LapInputError as error:
            refused = refused or LapInputError(f"{members_text([b], batch)}: {error}")
    threads = len(direct) >= MEMBER_THREADS_FROM and CPUS > 1
    workers = solve_members(direct, solved_as, members.rows, members.cols, maximize, answers, threads, CPUS, check)
    invalid, infeasible = [], []
    for b, answer in enumerate(answers):
        if answer is not None and type(answer) is not tuple:
            (infeasible if "infeasible" in str(answer) else invalid).append(b)
    if invalid:
        raise invalid_entries(f": {members_text(invalid, batch)}")
    if infeasible:
        raise InfeasibleError(f"cost matrix is infeasible: {members_text(infeasible, batch)}")
    if refused is not None:
        raise refused
    if objectives:  # as the pipeline sums: fsum for float64, exact for integers
        for b, answer in enumerate(answers):
            if answer is not None:
                values = costs[b][answer]
                sums[b] = float_sum(values.tolist()) if values.dtype is FLOAT64 else exact_total(values)
    columns = col_ind = None
    if flat and host_list:
        columns = member_columns(answers, members.rows, members.cols)
    else:
        col_ind = padded_columns(answers, members.rows)
    details = {"threads": workers, "solve_ms": round((time.perf_counter() - begin) * 1e3, 3), "members": batch}
    return BatchEngineResult(col_ind=col_ind, device="cpu", dtype=np.dtype(members.dtype).name, details=details,
                             objectives=_objectives(sums) if objectives else None, columns=columns)


def padded_columns(answers: list, rows: np.ndarray) -> np.ndarray:
    """(B, most rows) the column of each member's row, −1 where none, from the members' answers
    ((rows, cols), or None for an empty member), in one scatter."""
    batch = len(answers)
    col_ind = np.full((batch, int(rows.max()) if batch else 0), -1, dtype=np.int64)
    solved = [b for b, answer in enumerate(answers) if answer is not None]
    _scatter(col_ind.reshape(-1), [answers[b] for b in solved], np.asarray(solved, dtype=np.int64) * col_ind.shape[1])
    return col_ind


def _scatter(out: np.ndarray, answers: list, starts: np.ndarray) -> None:
    """Each answer's columns into the flat ``out`` at its start plus its rows, in one assignment:
    ``out[starts[k] + rows_k] = cols_k`` for the k-th (rows, cols)."""
    if not answers:
        return
    found = [answer[0] for answer in answers]
    counts = np.fromiter(map(len, found), dtype=np.int64, count=len(found))
    out[np.repeat(starts, counts) + np.concatenate(found)] = np.concatenate([answer[1] for answer in answers])


def member_columns(answers: list, rows: np.ndarray, cols: np.ndarray) -> list:
    """Each member's column of each row (−1 where none), one int64 array per member: scipy's own
    columns where every row is assigned (rows ≤ cols, in order), the others (tall or empty members)
    scattered in one pass and cut into views. 1000 members of 1..40 × 1..40: ~0.25 ms, against
    ~0.7 ms to scatter all into a padded array and cut that up."""
    columns = [answer[1] if answer is not None else None for answer in answers]
    rest = np.flatnonzero((rows > cols) | (rows * cols == 0)).tolist()
    if not rest:
        return columns
    lengths = rows[rest]
    starts = np.cumsum(lengths) - lengths
    values = np.full(int(lengths.sum()), -1, dtype=np.int64)
    assigned = [k for k, b in enumerate(rest) if answers[b] is not None]
    _scatter(values, [answers[rest[k]] for k in assigned], starts[assigned])
    for b, start, length in zip(rest, starts.tolist(), lengths.tolist()):
        columns[b] = values[start:start + length]
    return columns


def float64_copies(matrices: list) -> list | None:
    """The integer matrices as float64, converted in one pass into this thread's reused buffer, for
    scipy to solve as they are (the views are good until this thread's next call); None when
    float64 might not hold them exactly (lapcli.work.float64_exact) or they mix dtypes or are
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
    if not (float64_exact_dtype(matrices[0].dtype, side)
            or float64_exact_magnitude(max(-float(flat.min()), float(flat.max())), side)):
        return None
    ends = np.cumsum(sizes).tolist()
    return [flat[end - m.size:end].reshape(m.shape) for m, end in zip(matrices, ends)]


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


def _check_float_spread(matrices: list) -> None:
    """Refuse float members a row of whose finite float64 costs spans more than float64 holds: the
    work stack's refusal (lapcli.work.SPREAD_OVERFLOWS) for members scipy is given as they are
    (near ±1e308 its sums overflow and it returns an assignment that is not optimal, without an
    error). Non-empty members only. One pass over their values end to end: where their sum of
    squares is finite, every |value| is below 1.4e154 and no spread can overflow (one
    multiply-add a value, against a min and a max); else the exact scan, and each row's only where
    that one is too wide."""
    native = {m.dtype for m in matrices} == {FLOAT64}
    wide = matrices if native else [m for m in matrices if m.dtype.itemsize == 8]
    if not wide:
        return
    values = _float64_end_to_end(wide, native)
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.einsum("i,i->", values, values)):  # NaN and ±inf fail it too: the exact scan
            return
    if _finite_spread_fits(values):
        return
    for matrix in wide:
        for row in matrix:
            if not _finite_spread_fits(row):
                raise LapInputError(SPREAD_OVERFLOWS)


def _float64_end_to_end(matrices: list, native: bool) -> np.ndarray:
    """The float64 matrices' values end to end, in a new array: their bytes joined where all are
    ``native`` float64 and C-contiguous, else concatenated. The join lets go of the GIL once for the
    whole copy where it is large; np.concatenate takes it back after each array, which in the helper
    thread, beside the caller's solves, cost 2.8 ms against 1.2 (1000 members of 1..40 × 1..40).
    Never this thread's reused buffer (_end_to_end): in the caller's thread it holds the integer
    members' float64 copies until they are solved, and writing it there changed their answers."""
    if native:
        try:
            return np.frombuffer(b"".join(matrices), dtype=FLOAT64)
        except (BufferError, ValueError, TypeError):  # a member that is not C-contiguous
            pass
    return np.concatenate([m.ravel() for m in matrices]).astype(FLOAT64, copy=False)


_FLOAT_BUFFER = threading.local()  # _end_to_end's buffer: a thread's own, kept between calls


def _integer_member(cost: np.ndarray, maximize: bool):
    """(rows, cols) of one integer member, exactly: by scipy on its float64 form where that is
    exact (reduced first if need be), else by the exact twin; or the ValueError scipy raised.
    Raises LapInputError where even the twin's int64 duals cannot hold them."""
    solvable = float64_solvable(cost, maximize)
    try:
        if solvable is None:  # integers too wide for float64 even reduced: the exact twin
            cols = exactly_wide(cost, maximize).astype(np.int64, copy=False)  # the twin's are int32
            rows = np.flatnonzero(cols >= 0)
            return rows, cols[rows]
        return scipy_lsa(solvable[0], maximize=solvable[1])
    except LapInputError:  # the exact twin's refusal: raised, not taken for scipy's invalid entries
        raise
    except ValueError as error:
        return error


def exactly_wide(cost: np.ndarray, maximize: bool) -> np.ndarray:
    """The column of each row of an integer matrix too wide for float64 even reduced (rows ≤
    columns or a tall one transposed), by the exact twin of the batch kernel."""
    from ...problem import prepare

    work = prepare(cost, maximize=maximize).work_stack(np)
    col_of_row = reference_stack(work.values)[0][0]
    n, m = cost.shape
    return caller_columns(col_of_row[None], n, m)[0] if n > m else col_of_row
