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
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from ...twins import reference_stack
from ...work import float64_exact, float64_solvable
from ..base import BatchEngineResult

# Below this many entries a problem's Python-side overhead (which holds the GIL) outweighs the
# solve (which releases it), and below THREADS_FROM entries in all the pool's start does: such
# stacks run in the caller's thread. 2-core CI machine, ms serial / 2 threads: 20000 × 4 × 4
# 16.9 / 32.2, 20000 × 8 × 8 33.6 / 33.1, 4000 × 24 × 24 43.8 / 24.2, 1000 × 64 × 64 78.6 / 39.3;
# 40 × 16 × 16 0.17 / 0.36, 200 × 16 × 16 1.02 / 0.90. (A ragged list's members run in the
# caller's thread: 1000 members of 1..40 × 1..40 took 9.4 ms on two threads, 8.4 on one.)
SERIAL_BELOW = 12 * 12
THREADS_FROM = 64 * 1024


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
    work = problem.work_stack(np)
    values = work.values
    batch, r, c = values.shape
    col_of_row = np.empty((batch, r), dtype=np.int64)

    exact = float64_exact(values)

    def solve_range(start: int, stop: int) -> None:
        for b in range(start, stop):  # r ≤ c: every work row is assigned, in order
            col_of_row[b] = scipy_lsa(values[b])[1] if exact else exactly(values[b])

    begin = time.perf_counter()
    workers = min(os.cpu_count() or 1, batch)
    if workers <= 1 or r * c < SERIAL_BELOW or batch * r * c < THREADS_FROM:
        workers = 1
        solve_range(0, batch)
    else:
        chunk = -(-batch // workers)  # one contiguous share per thread
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda start: solve_range(start, min(batch, start + chunk)), range(0, batch, chunk)))
    details = {"threads": workers, "solve_ms": round((time.perf_counter() - begin) * 1e3, 3)}
    _, n, m = problem.shape
    col_ind = caller_columns(col_of_row, n, m)
    col_ind = col_ind if problem.xp is np else problem.xp.asarray(col_ind)
    return BatchEngineResult(col_ind=col_ind, device=f"cpu ({workers} threads)", dtype=work.dtype, details=details,
                             notes=list(work.notes))


def run_members(members, *, maximize: bool) -> BatchEngineResult:
    """A ragged batch (lapcli.ragged.Members), each member solved by scipy as it is, in the
    caller's thread: no padding, which would only add work on the CPU (a list of 1000 problems of
    1..40 × 1..40 runs as fast as a plain scipy loop). Bad entries and infeasible members are named."""
    from ...errors import InfeasibleError
    from ...problem import exact_total, invalid_entries, members_text

    batch = len(members)
    width = int(members.rows.max()) if batch else 0
    col_ind = np.full((batch, width), -1, dtype=np.int64)
    objectives = [0] * batch
    invalid, infeasible = [], []
    begin = time.perf_counter()
    host_list = members.flat is None and members.xp is np
    for b in range(batch):
        cost = members.arrays[b] if host_list else members.member(b)  # a host list's own matrices, as they are
        cost = cost if isinstance(cost, np.ndarray) else cost.get()
        if cost.size == 0:
            objectives[b] = 0.0 if cost.dtype.kind == "f" else 0
            continue
        solvable = (cost, maximize) if cost.dtype.kind == "f" else float64_solvable(cost, maximize)
        try:
            if solvable is None:  # integers too wide for float64 even reduced: the exact twin
                cols = exactly_wide(cost, maximize)
                rows = np.flatnonzero(cols >= 0)
                cols = cols[rows]
            else:
                rows, cols = scipy_lsa(solvable[0], maximize=solvable[1])
        except ValueError as error:  # scipy's own checks: NaN or the wrong infinity, or no finite matching
            (infeasible if "infeasible" in str(error) else invalid).append(b)
            continue
        col_ind[b, rows] = cols
        objectives[b] = exact_total(cost[rows, cols])  # as the pipeline sums: exact, or fsum for float64
    if invalid:
        raise invalid_entries(f": {members_text(invalid, batch)}")
    if infeasible:
        raise InfeasibleError(f"cost matrix is infeasible: {members_text(infeasible, batch)}")
    details = {"threads": 1, "solve_ms": round((time.perf_counter() - begin) * 1e3, 3), "members": batch}
    return BatchEngineResult(col_ind=col_ind, device="cpu", dtype=np.dtype(members.dtype).name, details=details,
                             objectives=np.array(objectives))  # int64, or Python ints where wider


def exactly_wide(cost: np.ndarray, maximize: bool) -> np.ndarray:
    """The column of each row of an integer matrix too wide for float64 even reduced (rows ≤
    columns or a tall one transposed), by the exact twin of the batch kernel."""
    from ...problem import prepare

    work = prepare(cost, maximize=maximize).work_stack(np)
    col_of_row = reference_stack(work.values)[0][0]
    n, m = cost.shape
    return caller_columns(col_of_row[None], n, m)[0] if n > m else col_of_row
