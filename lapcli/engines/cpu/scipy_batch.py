"""Engine ``scipy-batch``: scipy's linear_sum_assignment per problem of the work stack, over a
thread pool (scipy releases the GIL while it solves, so the problems of a stack run on every core).

It solves the same work stack as the GPU batch engine (lapcli.work: tall problems transposed,
negated to maximise, floats reduced, forbidden entries at a sentinel) and maps the answers back
with the same rule, so the CPU tests guard those rules on every machine. No duals.

scipy computes in float64: a problem whose integer work is too wide for that to be exact is
reduced exactly first (lapcli.float64_exact.reduced_for_float64), or, when even that is too wide, solved by
the NumPy twin of the batch kernel (lapcli.twins.reference_stack: shortest augmenting paths with
exact int64 duals).
"""

from __future__ import annotations

import os
import time

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from ...arrays import host, native_order
from ...errors import LapInputError
from ...float64_exact import float64_exact, float64_solvable
from ...headroom import headroom_scale, with_headroom
from ...twins import reference_stack
from ...work import SPREAD_OVERFLOWS
from ..base import BatchEngineResult
from .member_answers import as_pairs, member_columns, padded_columns
from .member_threads import MEMBERS_SHARED_FROM, helpers, sharing_pays, solve_members
from . import member_process
from .member_values import FLOAT64, check_float_spread, float64_copies, spread_refusal

# Below this many entries a problem's Python-side overhead (which holds the GIL) outweighs the
# solve (which releases it), and below THREADS_FROM entries in all the pool's start does: such
# stacks run in the caller's thread. 2-core CI machine, ms serial / 2 threads: 20000 × 4 × 4
# 16.9 / 32.2, 20000 × 8 × 8 33.6 / 33.1, 4000 × 24 × 24 43.8 / 24.2, 1000 × 64 × 64 78.6 / 39.3;
# 40 × 16 × 16 0.17 / 0.36, 200 × 16 × 16 1.02 / 0.90. (A ragged batch: run_members.)
SERIAL_BELOW = 12 * 12
THREADS_FROM = 64 * 1024
CPUS = os.cpu_count() or 1  # read once: a call costs ~10 µs, a quarter of a small stack's call


def _objectives(sums: list) -> np.ndarray:
    """The members' sums as one array: float64 where one is a float (unless an integer one passes
    2^53, which float64 would round), int64 for integers, or the Python ints and floats they are
    where one passes int64 (np.array then gives uint64, or rounds them all to float64). Only a
    float64 result is scanned."""
    array = np.array(sums)
    if array.dtype == np.int64 or not sums:
        return array
    if array.dtype == np.float64 and any(type(x) is float for x in sums):
        if all(type(x) is float or -2**53 <= x <= 2**53 for x in sums):
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
    if workers == 1:
        works = [solve(0, batch)]
    else:
        try:
            works = _shared(workers, batch, solve)
        except LapInputError:  # a share's refusal numbers its own members: the whole stack's names the caller's
            problem.work_stack(np)
            raise
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
    # one min and max for the range (a member's own cost small stacks 2-2.7x: 20,000 × 4 × 4); where
    # its costs near float64's largest need headroom, each member its own scale: one for all flushed
    # another member's subnormal costs to zero (a non-optimal answer)
    own_scales = values.dtype.kind == "f" and values.size and headroom_scale(values, min(values.shape[-2:])) != 1.0
    for k in range(values.shape[0]):
        member = with_headroom(values[k]) if own_scales else values[k]
        col_of_row[start + k] = scipy_lsa(member)[1] if exact else exactly(member)


def run_members(members, *, maximize: bool, objectives: bool = True, pairs: bool = False, flat: bool = False,
                timeout: float | None = None, dtype: str | None = None,
                device: int | None = None) -> BatchEngineResult | None:
    """A ragged batch (lapcli.ragged.Members), each member solved by scipy as it is: no padding,
    which would only add work on the CPU. Where enough members that scipy solves as they are
    (floats, and integers float64 holds exactly) are large enough to pay for it (lapcli.engines.
    cpu.member_threads.sharing_pays), part go to the worker process, or their large ones to a
    helper thread. Bad entries and infeasible members are
    named. ``objectives=False``: the members' sums are skipped (``objectives`` None). ``flat``: a
    host list's columns come back as one array per member (``columns``; ``col_ind`` None), not
    scattered into a padded (B, n) array only to be cut up again. ``pairs``, ``timeout`` and
    ``device`` are the engines' one interface: the pipeline makes the pairs from the columns, scipy
    has no time limit and runs here. A requested ``dtype`` that some member does not hold already
    declines (None): the pipeline packs the members into one stack, whose work honours or refuses it."""
    from ...ragged_integers import holds_dtype

    if not holds_dtype(members, dtype):
        return None
    from ...errors import InfeasibleError, members_text
    from ...problem import invalid_entries
    from ...sums import exact_total, float_sum

    batch = len(members)
    sums = [0] * batch
    host_list = members.flat is None and members.xp is np
    costs = members.arrays if host_list else [host(members.member(b)) for b in range(batch)]
    begin = time.perf_counter()
    direct, integers = [], []  # members scipy solves as they are; integers that may need more
    dtypes = members.dtypes if host_list and members.dtypes is not None else {cost.dtype for cost in costs}
    if not all(dtype.isnative for dtype in dtypes):  # made native, as a matrix is: every check reads float64
        costs = [native_order(cost) for cost in costs]
        dtypes = {cost.dtype for cost in costs}
    sizes = members.rows * members.cols
    if len(dtypes) == 1:  # one dtype: the empty members told from the sizes (~0.1 ms for 1000 members)
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
    check_spread = bool(direct)  # what the work stack refuses, scipy would get wrong: refused
    solved_as = costs  # what scipy is given for each member
    threads = sharing_pays(len(direct) + len(integers), int(sizes.sum()), CPUS)
    verify = [] if direct or not threads or not member_process.worker(start=False) else integers
    if verify and len(dtypes) == 1 and next(iter(dtypes)).kind != "b":
        # integers alone beside the worker: each process checks (one scan) and converts (scipy
        # does, a member at a time) its own share; one checked copy of them all here first cost
        # ~2 ms of 10 on 1000 members of 1..40 × 1..40
        direct, integers, as_floats = integers, [], None
    else:
        verify = []
        as_floats = float64_copies([costs[b] for b in integers])
    if as_floats is not None:
        solved_as = list(costs)
        for b, values in zip(integers, as_floats):
            solved_as[b] = values
        direct, integers = sorted(direct + integers), []
    answers = [None] * batch  # (rows, cols), or the ValueError scipy raised
    try:
        if integers and check_spread:  # solved one by one here first: the refusal comes before them
            check_float_spread([costs[b] for b in direct])
            check_spread = False  # else solve_members checks, in a helper if it can
        refused = _integer_members(integers, costs, maximize, answers)
        threads = len(direct) >= MEMBERS_SHARED_FROM and sharing_pays(len(direct), int(sizes[direct].sum()), CPUS)
        workers, by_process, too_wide = solve_members(direct, solved_as, members.rows, members.cols, maximize,
                                                      answers, threads, CPUS, check_spread, verify_integers=bool(verify))
    except LapInputError as error:  # a spread refused where it was found: the members named, once refused
        if str(error) != SPREAD_OVERFLOWS:
            raise
        raise LapInputError(spread_refusal([costs[b] for b in direct], direct, batch)) from None
    if too_wide:  # integers float64 may not hold exactly: each solved exactly after all
        refused = _integer_members(verify, costs, maximize, answers)
    invalid, infeasible = [], []
    for b, answer in enumerate(answers):
        if isinstance(answer, ValueError):
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
                values = costs[b][as_pairs(answer)]
                sums[b] = float_sum(values.tolist()) if values.dtype is FLOAT64 else exact_total(values)
    columns = col_ind = None
    if flat and host_list:
        columns = member_columns(answers, members.rows, members.cols)
    else:
        col_ind = padded_columns(answers, members.rows)
    details = {"threads": workers, "solve_ms": round((time.perf_counter() - begin) * 1e3, 3), "members": batch}
    if by_process:
        details["worker_process"] = True
    return BatchEngineResult(col_ind=col_ind, device="cpu", dtype=np.dtype(members.dtype).name, details=details,
                             objectives=_objectives(sums) if objectives else None, columns=columns)


def _integer_members(indices: list, costs: list, maximize: bool, answers: list) -> LapInputError | None:
    """Each integer member of ``indices`` solved exactly (:func:`_integer_member`) into
    ``answers``; lapcli's refusal of those too wide even for exact int64 duals, naming every one
    (the first's words; not scipy's error: raised after invalid entries and infeasibility, in a
    stack's order), or None."""
    from ...errors import members_text

    first, refused = None, []
    for b in indices:
        try:
            answers[b] = _integer_member(costs[b], maximize)
        except LapInputError as error:
            first = first or error
            refused.append(b)
    # the first refusal's class (TooWideError kept) and words, every refused member named
    return None if first is None else type(first)(f"{members_text(refused, len(costs))}: {first}")


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
