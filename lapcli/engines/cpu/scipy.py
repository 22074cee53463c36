"""Engine ``scipy``: scipy.optimize.linear_sum_assignment (shortest augmenting path, Crouse 2016).

It solves the original matrix directly (rectangular, maximize and infinities included), so it is
also the reference the other engines are tested against. It reports no steps and no duals, so
its answers are not certified.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from ...errors import InfeasibleError
from ..base import EngineResult


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    original = problem.original
    if problem.xp is not np:
        original = problem.xp.asnumpy(original)
    try:
        rows, cols = scipy_lsa(original, maximize=problem.maximize)
    except ValueError as error:
        if "infeasible" in str(error):
            raise InfeasibleError() from None
        raise
    return EngineResult(rows=rows.astype(np.int64), cols=cols.astype(np.int64), device="cpu",
                        dtype=str(original.dtype))
