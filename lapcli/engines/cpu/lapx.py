"""Engine ``lapx``: lapx's ``lapjv`` (Jonker–Volgenant, one CPU core), when installed
(``pip install 'lapcli[lapx]'``). Rectangular input via lapjv's ``extend_cost``; forbidden entries
become a large finite cost and are checked afterwards. No steps, no duals: not certified.

The lapx distribution installs the import package ``lap`` (a drop-in for gatagat/lap), not
``lapx``; ``lapx_module`` finds it and checks that it is lapx's.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ...errors import InfeasibleError
from ..base import EngineResult


@lru_cache(maxsize=1)
def lapx_module():
    """lapx's import package ``lap``; ImportError when lapx is not the distribution behind it."""
    from importlib import metadata

    try:
        metadata.version("lapx")
    except metadata.PackageNotFoundError:
        raise ImportError("lapx is not installed (pip install 'lapcli[lapx]')") from None
    import lap

    return lap


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    lapx = lapx_module()

    cost = problem.original
    if problem.xp is not np:
        cost = problem.xp.asnumpy(cost)
    cost = np.asarray(cost, dtype=np.float64)
    if problem.maximize:
        cost = -cost
    if problem.has_forbidden:
        finite = np.isfinite(cost)
        lo, hi = cost[finite].min(), cost[finite].max()
        cost = np.where(finite, cost, hi + (max(cost.shape) + 1) * (hi - lo + 1.0))
    _, column_of_row, _ = lapx.lapjv(np.ascontiguousarray(cost), extend_cost=cost.shape[0] != cost.shape[1])
    rows = np.flatnonzero(column_of_row >= 0).astype(np.int64)
    cols = column_of_row[rows].astype(np.int64)
    if problem.has_forbidden and bool(np.isinf(problem.values_at(rows, cols)).any()):
        raise InfeasibleError()
    return EngineResult(rows=rows, cols=cols, device="cpu", dtype="float64")
