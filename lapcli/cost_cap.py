"""Large finite costs that no optimum can take, kept out of the float tolerance.

A float64 work problem's zero tolerance follows S, its largest reduced cost (lapcli.work: eps = k·S·2⁻⁵⁰), and
the engines that compare reduced costs with eps (cuda, cuda-stepwise, cuda-sap, numpy) take costs within eps of
each other for equal. A placeholder for pairs that should not be taken ("big M": 1e9, 1e12) makes S that large:
on 512 × 512 U[0, 1) costs with 5 % of them 1e12, engine ``numpy`` returned 1.78 more than the optimum of 1.68,
certified within its tolerance of 466 (scipy, which compares exactly, found the optimum).

The answer an engine found bounds every optimum: reduced costs are ≥ 0, so a pair whose reduced cost exceeds the
found assignment's reduced total T is in no optimal assignment. Capping every reduced cost at C = 2T (S·2⁻³⁰ where
T = 0) keeps the optimal assignments (any assignment through a capped pair costs at least C, more than T plus the
engine's error 2k·eps(C) for k < 2²³) and the proof (a capped cost is below the true one, so duals feasible for the
capped costs are for the true ones, and the pairs an optimum takes are not capped), while eps follows C.

After a solve (lapcli.engines.base.certified_result) where S exceeds CAP_GAIN·C, the answer is judged again at the
capped tolerance: where it passes, its certificate carries that tighter tolerance; where not and S exceeds
RETRY_GAIN·C, CapRetry asks the pipeline to solve once more on the capped work (lapcli.problem.Problem.cap_work),
whose tolerance is eps(C). H200, 5 % of U[0, 1) costs at 1e12: cuda came back 12.8 and 25.5 above the optimum at
2,048 and 4,096 (cuda-sap, auto's choice, 3.6 and 3.0), certified within 1.8 and 3.6; capped, each is the optimum,
certified within 1e-12 to 5e-11, in 0.016-0.085 s against 0.005-0.059 s for the wrong answers
(docs/bench/cost-cap-h200.txt).

float32 work is unreduced (lapcli.work) and its tolerance follows max |c|; slacks computed from it round at that
magnitude, so it is not judged at eps(C) but solved again on float64 work, reduced exactly and capped (unless
float32 was asked for: the report then says why not).
"""

from __future__ import annotations

import time

import numpy as np

from .errors import SolverError
from .problem import array_module
from .work import float_eps

# Judge an answer again where capping tightens the tolerance at least this many times, and solve again
# where it tightens it RETRY_GAIN times and the answer does not hold there. Exponential costs (max/T ~ 30)
# are judged again, not solved again: their cuda-sap answers held the loose tolerance and not the capped
# one, and a second solve took twice the time for the same pairs (H200, 2,048 to 8,192).
CAP_GAIN = 8
RETRY_GAIN = 1024
# C where the found assignment's reduced total is 0, relative to S (any C > 0 keeps the optima then).
CAP_FLOOR = 2.0**-30


class CapRetry(Exception):
    """The answer does not hold at the capped tolerance: solve again on work capped at ``cap``.
    ``first``: that answer (an EngineResult, certified at the looser tolerance), for a caller that
    cannot solve again, or whose second solve ran out of time."""

    def __init__(self, square: bool, cap: float, first=None):
        super().__init__(f"reduced costs capped at {cap!r}")
        self.square, self.cap, self.first = square, cap, first


def cap_for(work, col_of_row) -> float | None:
    """C for a float work matrix (k × m, NumPy or CuPy) and the column of each of its rows, or None where
    capping would not tighten the tolerance CAP_GAIN times (integers, small spreads). float32 work is
    unreduced, its tolerance following max |c|: its reduced total is taken from its row minima in float64."""
    values = work.values
    if work.exact or values.dtype.kind != "f" or not values.size or work.eps <= 0:
        return None
    unreduced = values.dtype.itemsize == 4
    if not unreduced and work.row_offset is None:
        return None
    k, m = values.shape
    xp = array_module(values)
    picked = values[xp.arange(k), xp.asarray(col_of_row)]  # padded rows are zeros
    if unreduced:  # row by row, then summed: the costs' magnitude cancels before the sum
        picked = picked.astype(np.float64) - values.min(axis=1).astype(np.float64)
    total = float(picked.sum())
    if unreduced and total == 0:  # every row at its minimum: optimal as it is, whatever the tolerance
        return None
    cap = 2 * total if total > 0 else _spread(work) * CAP_FLOOR
    return cap if _spread(work) > CAP_GAIN * cap and cap == cap else None


def judged_at_cap(work) -> bool:
    """Whether slacks computed from ``work`` resolve the capped tolerance: reduced float64 work does; float32
    work holds its costs unreduced, whose slacks round at max |c|, so its answers are solved again instead."""
    return work.values.dtype.itemsize == 8


def _spread(work) -> float:
    """S, the largest reduced cost, back from the work's eps = m·S·2⁻⁵⁰."""
    return work.eps / float_eps(work.values.shape[1], 1.0)


def tightened(work, col_of_row: np.ndarray, v: np.ndarray, certificate, engine: str, square: bool,
              retry: bool = True):
    """``certificate`` (lapcli.certificate.Certificate) judged again at the capped tolerance, where capping
    would tighten it CAP_GAIN times: the tighter certificate where the answer holds there, else CapRetry where
    capping tightens it RETRY_GAIN times (and ``retry``: not once capped already), else the certificate as it was."""
    from .certificate import judged

    cap, m = cap_for(work, col_of_row), work.values.shape[1]
    if cap is None:
        return certificate
    if judged_at_cap(work):
        try:  # the slacks already read, judged at eps(C) (host duals and columns: certified_result's copies)
            return judged(certificate.min_slack, certificate.max_assigned_slack, v, col_of_row, m,
                          float_eps(m, cap), engine, time.perf_counter() - certificate.ms / 1e3, certificate.where)
        except SolverError:
            pass
    if not retry or _spread(work) <= RETRY_GAIN * cap:
        return certificate
    raise CapRetry(square, cap)


def solved_capped(problem, run, retry: CapRetry, timeout: float | None, start: float, device):
    """``run(problem, timeout=, device=)`` once more on work capped at ``retry.cap`` (its details say
    so: ``costs_capped_at``), in the time ``timeout`` leaves after ``start``; past it, the first answer,
    proved at its looser tolerance."""
    problem.cap_work(retry.square, retry.cap)
    left = None if timeout is None else max(timeout - (time.perf_counter() - start), 1e-6)
    try:
        result = run(problem, timeout=left, device=device)
    except SolverError as error:
        if "time limit" not in str(error):
            raise
        retry.first.details["costs_capped_at"] = f"not solved again: {error}"
        return retry.first
    result.details["costs_capped_at"] = retry.cap
    return result
