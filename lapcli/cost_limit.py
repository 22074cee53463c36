"""``cost_limit``: lapjv's rule for leaving rows unassigned, solved exactly as lapjv solves it.

lapjv (lap/lapx) extends an n × m matrix C to the (n + m) × (n + m) problem

    [ C          L/2 ]        L/2 everywhere in the two off-diagonal blocks,
    [ L/2        0   ]        0 in the bottom-right block,

so a row takes a real column only when that is cheaper than L overall; a row that takes a dummy
column is unassigned (−1 in ``x``). For integer costs and an integral L the matrix is doubled
(2C and L) so that everything stays an exact integer.
"""

from __future__ import annotations

import math

import numpy as np

from .errors import LapInputError


def augmented_matrix(cost: np.ndarray, cost_limit: float) -> np.ndarray:
    n, m = cost.shape
    integral = cost.dtype.kind in "biu" and float(cost_limit).is_integer() and abs(cost_limit) < 2**52
    if integral:
        dtype, scale, half = np.int64, 2, int(cost_limit)
    else:
        dtype, scale, half = np.float64, 1, cost_limit / 2.0
    extended = np.full((n + m, n + m), half, dtype=dtype)
    extended[:n, :m] = np.asarray(cost, dtype=dtype) * scale
    extended[n:, m:] = 0
    return extended


def solve_with_cost_limit(cost, cost_limit, *, solver, maximize, dtype, timeout, device):
    from .facade import solve
    from .problem import as_cost_matrix, check_entries
    from .results import Solution

    if maximize:
        raise LapInputError("cost_limit applies to minimisation, as in lapjv; negate the costs instead")
    if not math.isfinite(float(cost_limit)):
        raise LapInputError(f"cost_limit must be a finite number, got {cost_limit}")
    arr, xp = as_cost_matrix(cost)
    check_entries(arr, xp, maximize=False)
    host = arr if xp is np else xp.asnumpy(arr)
    n, m = host.shape
    inner = solve(augmented_matrix(host, cost_limit), solver=solver, dtype=dtype, timeout=timeout, device=device)
    real = (inner.row_ind < n) & (inner.col_ind < m)
    rows, cols = inner.row_ind[real], inner.col_ind[real]
    values = host[rows, cols]
    objective = int(sum(int(x) for x in values.tolist())) if host.dtype.kind in "biu" else math.fsum(values.tolist())
    report = inner.report
    report.objective, report.n_rows, report.n_cols = objective, n, m
    report.notes = [*report.notes, f"cost_limit {cost_limit}: solved as lapjv's ({n + m})² augmented problem; "
                    f"{n - len(rows)} row(s) left unassigned; the certificate is that problem's"]
    return Solution(row_ind=rows, col_ind=cols, objective=objective, report=report, duals=None)
