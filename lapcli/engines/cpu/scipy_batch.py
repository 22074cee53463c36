"""Engine ``scipy-batch``: scipy's linear_sum_assignment per problem over a thread pool. scipy
releases the GIL while it solves, so the problems of a stack run on every core. No duals."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from ..base import BatchEngineResult

# Below this many entries a problem's Python-side overhead (which holds the GIL) outweighs the
# solve (which releases it): such stacks run in the caller's thread.
SERIAL_BELOW = 32 * 32


def run_batch(problem, *, timeout=None, device=None) -> BatchEngineResult:
    stack = problem.original if problem.xp is np else problem.xp.asnumpy(problem.original)
    batch, n, m = stack.shape
    col_ind = np.full((batch, n), -1, dtype=np.int64)
    maximize = problem.maximize

    def solve_range(start: int, stop: int) -> None:
        if n <= m:  # every row is assigned, in order: a plain row copy (a fancy index costs ~1 µs more)
            for b in range(start, stop):
                col_ind[b] = scipy_lsa(stack[b], maximize=maximize)[1]
            return
        for b in range(start, stop):
            rows, cols = scipy_lsa(stack[b], maximize=maximize)
            col_ind[b, rows] = cols

    begin = time.perf_counter()
    workers = min(os.cpu_count() or 1, batch)
    if workers <= 1 or n * m < SERIAL_BELOW:
        solve_range(0, batch)
    else:
        chunk = -(-batch // workers)  # one contiguous share per thread
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(lambda start: solve_range(start, min(batch, start + chunk)), range(0, batch, chunk)))
    details = {"threads": workers, "solve_ms": round((time.perf_counter() - begin) * 1e3, 3)}
    col_ind = col_ind if problem.xp is np else problem.xp.asarray(col_ind)
    return BatchEngineResult(col_ind=col_ind, device=f"cpu ({workers} threads)", dtype=str(stack.dtype), details=details)
