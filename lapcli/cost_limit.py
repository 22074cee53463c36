"""``cost_limit``: lapjv's rule for leaving rows unassigned, as a transform of the problem.

lapjv (lap/lapx) extends an n × m matrix C to the (n + m) × (n + m) problem

    [ C          L/2 ]        L/2 everywhere in the two off-diagonal blocks,
    [ L/2        0   ]        0 in the bottom-right block,

so a row takes a real column only when that is cheaper than L overall; a row that takes a dummy
column is unassigned (−1 in ``x``). For integer costs and an integral L the matrix is doubled
(2C and L) so that everything stays an exact integer. The pipeline solves the augmented matrix like
any other (lapcli.pipeline) and :meth:`CostLimit.solution` maps the answer back.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import LapInputError
from .problem import array_module, check_entries, exact_sum, prepare
from .results import Solution


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


@dataclass
class CostLimit:
    """The caller's n × m costs (on the host), the limit, and the augmented matrix to solve."""

    cost: np.ndarray
    limit: float
    matrix: np.ndarray

    @classmethod
    def of(cls, cost, cost_limit: float, maximize: bool) -> CostLimit | None:
        """Validate; None for an infinite limit (lapjv's default: no row is left out)."""
        if maximize:
            raise LapInputError("cost_limit applies to minimisation, as in lapjv; negate the costs instead")
        try:
            limit = float(cost_limit)
        except (TypeError, ValueError):
            raise LapInputError(f"cost_limit must be a number, got {cost_limit!r}") from None
        if limit == math.inf:
            return None
        if not math.isfinite(limit):
            raise LapInputError(f"cost_limit must be a finite number or +inf, got {cost_limit}")
        arr = prepare(cost, check=False).original
        xp = array_module(arr)
        check_entries(arr[None], xp, maximize=False)
        host = arr if xp is np else xp.asnumpy(arr)
        return cls(host, limit, augmented_matrix(host, limit))

    def solution(self, inner: Solution) -> Solution:
        """The augmented problem's answer as the caller's: real pairs only, the caller's objective."""
        n, m = self.cost.shape
        real = (inner.row_ind < n) & (inner.col_ind < m)
        rows, cols = inner.row_ind[real], inner.col_ind[real]
        total = exact_sum(self.cost[rows, cols][None])[0]
        objective = total.item() if isinstance(total, np.generic) else total
        report = inner.report
        report.objective, report.n_rows, report.n_cols = objective, n, m
        report.notes = [*report.notes, f"cost_limit {self.limit:g}: solved as lapjv's ({n + m})² augmented problem; "
                        f"{n - len(rows)} row(s) left unassigned; the certificate is that problem's"]
        return Solution(row_ind=rows, col_ind=cols, objective=objective, report=report, duals=None)
