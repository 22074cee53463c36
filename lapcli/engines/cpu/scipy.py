"""Engine ``scipy``: scipy.optimize.linear_sum_assignment (shortest augmenting path, Crouse 2016).

Integer costs go to scipy as they are (rectangular, maximize included), so it is also the
reference the other engines are tested against. scipy computes in float64: integers too wide for
that to be exact (lapcli.float64_exact.float64_exact) are reduced exactly first
(lapcli.float64_exact.reduced_for_float64, same optimal assignments), and refused when even that is too
wide (``auto`` gives those to the exact NumPy engine). Float costs go to scipy as the work matrix
(lapcli.work: float64 rows reduced by their minima, exactly for offset costs), so that its
arithmetic works at the scale of their spread, which the certificate's tolerance follows: an
offset matrix (1e6 + U(0, 1e-7)) solved as given came back a few ulps of 1e6 off the optimum,
and its certificate failed. Work within 4(k + 1)× of float64's largest value goes to scipy scaled
by a power of two (lapcli.headroom.with_headroom): its path sums overflowed there and came back with
an assignment that was not optimal. Floats whose spread overflows float64 have no work matrix and
are refused (scipy, given them as they are, returned assignments that were not optimal, uncertified;
the drop-in ``linear_sum_assignment`` still hands them to scipy, as scipy's own function would).
The pipeline recovers the duals and certifies the answer.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from ...errors import InfeasibleError
from ...headroom import with_headroom
from ..base import EngineResult, float64_costs


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    if problem.requested_dtype is not None:
        return _run_on_work(problem)
    if problem.original.dtype.kind not in "biu":
        return _run_on_work(problem)  # a spread past float64's range has no work: refused, as by the batch forms
    original = problem.original
    if problem.xp is not np:
        original = problem.xp.asnumpy(original)
    dtype = original.dtype.name
    original, maximize = float64_costs(original, problem.maximize, "scipy")
    try:
        rows, cols = scipy_lsa(original, maximize=maximize)
    except ValueError as error:
        if "infeasible" in str(error):
            raise InfeasibleError() from None
        raise
    return EngineResult(rows=rows.astype(np.int64), cols=cols.astype(np.int64), device="cpu", dtype=dtype)


def _run_on_work(problem) -> EngineResult:
    """Floats, or a requested working dtype: scipy solves the work stack (lapcli.work: the costs
    in that dtype, transposed when tall, negated to maximise, float64 rows reduced, forbidden
    entries at a sentinel), mapped back."""
    work = problem.work_stack(np)
    values, _ = float64_costs(work.values[0], False, "scipy")
    # scipy's path sums must not overflow: scaled (exactly) where they could
    _, work_cols = scipy_lsa(with_headroom(values))  # every work row is assigned, in order (rows ≤ columns)
    rows, cols = problem.assignment_from_work(work_cols)
    return EngineResult(rows=rows, cols=cols, device="cpu", dtype=work.dtype)

