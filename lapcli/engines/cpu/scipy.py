"""Engine ``scipy``: scipy.optimize.linear_sum_assignment (shortest augmenting path, Crouse 2016).

It solves the original matrix directly (rectangular, maximize and infinities included), so it is
also the reference the other engines are tested against. scipy computes in float64: integers
too wide for that to be exact (lapcli.work.float64_exact) are reduced exactly first
(lapcli.work.reduced_for_float64, same optimal assignments), and refused when even that is too
wide (``auto`` gives those to the exact NumPy engine). It reports no steps and no duals, so its
answers are not certified.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from ...errors import InfeasibleError, SolverError
from ...work import float64_solvable
from ..base import EngineResult


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    if problem.requested_dtype is not None:
        return _run_on_work(problem)
    original = problem.original
    if problem.xp is not np:
        original = problem.xp.asnumpy(original)
    dtype = original.dtype.name
    original, maximize = _exact_for_float64(original, problem.maximize)
    try:
        rows, cols = scipy_lsa(original, maximize=maximize)
    except ValueError as error:
        if "infeasible" in str(error):
            raise InfeasibleError() from None
        raise
    return EngineResult(rows=rows.astype(np.int64), cols=cols.astype(np.int64), device="cpu", dtype=dtype)


def _run_on_work(problem) -> EngineResult:
    """A requested working dtype: scipy solves the work stack (lapcli.work: the costs in that dtype,
    transposed when tall, negated to maximise, forbidden entries at a sentinel), mapped back."""
    work = problem.work_stack(np)
    values, _ = _exact_for_float64(work.values[0], False)
    work_rows, work_cols = scipy_lsa(values)  # every work row is assigned (rows ≤ columns)
    rows, cols = (work_cols, work_rows) if problem.transposed else (work_rows, work_cols)
    order = np.argsort(rows, kind="stable")
    return EngineResult(rows=rows[order].astype(np.int64), cols=cols[order].astype(np.int64), device="cpu",
                        dtype=work.dtype)


def _exact_for_float64(values: np.ndarray, maximize: bool) -> tuple[np.ndarray, bool]:
    solvable = float64_solvable(values, maximize)
    if solvable is None:
        raise SolverError("integer costs too wide for scipy's float64 to be exact, even reduced; "
                          "use --solver numpy (exact int64 duals) or auto")
    return solvable
