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
RETRY_GAIN·C, CapRetry asks the pipeline to solve again on the capped work (lapcli.problem.Problem.cap_work),
whose tolerance is eps(C), and again while each answer's own cap is RETRY_GAIN times tighter: an answer within
k·eps(C) of the optimum may still be far above it where the costs span hundreds of orders of magnitude (4 × 4,
costs 1e-150 to 1e150: once capped, 1e50 against the optimum 2; capped twice, 2; on an H200, exp(U·600 − 300)
costs: cuda 6.3e46 against 7.8e-126 at 300², docs/bench/cost-cap-rounds-h200-2026-11-30.txt). H200, 5 % of
U[0, 1) costs at 1e12: cuda came back 12.8 and 25.5 above the optimum at 2,048 and 4,096 (cuda-sap, auto's
choice, 3.6 and 3.0), certified within 1.8 and 3.6; capped, each is the optimum, certified within 1e-12 to
5e-11, in 0.016-0.085 s against 0.005-0.059 s for the wrong answers (docs/bench/cost-cap-h200.txt).

After a solve T is bounded from the answer's host duals (total_bound), with no pass over the matrix. float32 work
is unreduced (lapcli.work) and its tolerance follows max |c|; slacks computed from it round at that magnitude, so it
is not judged at eps(C) but solved again on float64 work, reduced exactly and capped, where its tolerance can reach
the spacing float32 gives the costs that matter (unless float32 was asked for: the report then says why not).
"""

from __future__ import annotations

import math
import time

import numpy as np

from .errors import SolverError
from .problem import array_module
from .steps import summed
from .work import float_eps

# Judge an answer again where capping tightens the tolerance at least this many times, and solve again
# where it tightens it RETRY_GAIN times and the answer does not hold there. Exponential costs (max/T ~ 30)
# are judged again, not solved again: their cuda-sap answers held the loose tolerance and not the capped
# one, and a second solve took twice the time for the same pairs (H200, 2,048 to 8,192).
CAP_GAIN = 8
RETRY_GAIN = 1024
# Solves on capped work at most, each capped RETRY_GAIN or more times tighter than the one before: costs
# exp(U·1400 − 700) (1e±304) took up to 22 on 300 × 300 (engine numpy), exp(U·600 − 300) up to 9 on 40 × 40.
CAP_ROUNDS = 64
# C where the found assignment's reduced total is 0, relative to S (any C > 0 keeps the optima then).
CAP_FLOOR = 2.0**-30


class CapRetry(Exception):
    """The answer does not hold at the capped tolerance: solve again on work capped at ``cap``.
    ``first``: that answer (an EngineResult, certified at the looser tolerance), for a caller that
    cannot solve again, or whose second solve ran out of time."""

    def __init__(self, square: bool, cap: float, first=None):
        super().__init__(f"reduced costs capped at {cap!r}")
        self.square, self.cap, self.first = square, cap, first


def cap_for(work, col_of_row, proof=None) -> float | None:
    """C for a float work matrix (k × m, NumPy or CuPy) and the column of each of its rows, or None where
    capping would not tighten the tolerance CAP_GAIN times (integers, small spreads). float32 work is
    unreduced, its tolerance following max |c|: its reduced total is taken from its row minima in float64.
    ``proof``: (u, v, certificate) of the answer, host arrays: T is then bounded from them (total_bound), with
    no pass over the matrix (on the GPU that pass and its copies took 0.3-0.4 ms of a 10 ms solve at 1,024)."""
    capped = _cap_and_total(work, col_of_row, proof)
    return capped[0] if capped else None


def _cap_and_total(work, col_of_row, proof) -> tuple[float, float] | None:
    """(C, T) as cap_for finds them, or None where cap_for's C is."""
    values = work.values
    if work.exact or values.dtype.kind != "f" or not values.size or work.eps <= 0:
        return None
    unreduced = values.dtype.itemsize == 4
    if not unreduced and work.row_offset is None:
        return None
    total = total_bound(col_of_row, *proof, unreduced) if proof is not None else None
    if total is None:  # no proof, or reduced work whose bound is loose (assigned slacks near eps): the pass
        total = summed_total(values, col_of_row, unreduced)[0]
    if unreduced and total <= 0:  # every row at its minimum: optimal as it is, whatever the tolerance
        return None
    cap = 2 * total if total > 0 else _spread(work) * CAP_FLOOR
    fits = _spread(work) > CAP_GAIN * cap and cap == cap and keeps_optima(cap, total, values.shape)
    return (cap, total) if fits else None


def keeps_optima(cap: float, total: float, shape: tuple) -> bool:
    """Whether an assignment through a pair capped at ``cap`` still costs more than ``total`` plus the
    engine's error 2k·eps(C) (the module's docstring): eps(C) has a floor, float64's smallest normal
    number, which a subnormal C does not pass (costs of 5e-324 beside 2.2e-308: capped at 1e-323, the
    2.2e-308 pair read as within eps of the 5e-324 one, and was taken, certified)."""
    k, m = shape[-2], shape[-1]
    return cap - total > 2 * k * float_eps(m, cap)


def summed_total(values, col_of_row, unreduced: bool):
    """(T summed from the matrix in one pass, each row's least cost or None): the assigned costs (padded rows
    are zeros), less each row's least where the work is unreduced, row by row so that the costs' magnitude
    cancels before the sum."""
    xp = array_module(values)
    picked = values[xp.arange(values.shape[0]), xp.asarray(col_of_row)]
    if not unreduced:
        with np.errstate(over="ignore"):  # a total past float64's range is inf: no cap
            return float(picked.sum()), None
    least = values.min(axis=1).astype(np.float64)
    return float((picked.astype(np.float64) - least).sum()), least


def total_bound(col_of_row, u, v, certificate, unreduced: bool) -> float | None:
    """An upper bound of T from the answer's duals and slacks (a larger C keeps the optima as well): an assigned
    cost is u_i + v_j within the largest assigned slack; a reduced row's least cost is 0, an unreduced one's at
    least u_i + min v + the least slack. Plus the float64 rounding of these sums, 2^-50 of the duals a row.
    None for reduced work where the slacks' share passes 1/8 of it (an engine that left assigned slacks near
    its inflated eps: H200 cuda, 4,053 against 13 at 2,048): T is then summed from the matrix."""
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    on_pairs, k = v[np.asarray(col_of_row)], len(u)
    if not k:
        return 0.0
    rounding = 2.0**-50 * (float(np.abs(u).max()) + float(np.abs(v).max()))
    margin = k * (max(certificate.max_assigned_slack, 0.0) + rounding)
    try:
        if unreduced:  # structurally loose (min v); float32 is solved again only after the pass (_float32_cap)
            return math.fsum(on_pairs.tolist()) - k * float(v.min()) - k * certificate.min_slack + margin
        bound = math.fsum((u + on_pairs).tolist()) + margin
    except OverflowError:  # fsum's partial sums past float64's range (duals near 1.8e308): no bound, no cap
        return None
    return bound if margin <= bound / 8 else None


def judged_at_cap(work) -> bool:
    """Whether slacks computed from ``work`` resolve the capped tolerance: reduced float64 work does; float32
    work holds its costs unreduced, whose slacks round at max |c|, so its answers are solved again instead."""
    return work.values.dtype.itemsize == 8


def _spread(work) -> float:
    """S, the largest reduced cost, back from the work's eps = m·S·2⁻⁵⁰."""
    return work.eps / float_eps(work.values.shape[1], 1.0)


def tightened(work, col_of_row: np.ndarray, u: np.ndarray, v: np.ndarray, certificate, engine: str, square: bool,
              retry: bool = True):
    """``certificate`` (lapcli.certificate.Certificate) judged again at the capped tolerance, where capping
    would tighten it CAP_GAIN times: the tighter certificate where the answer holds there, else CapRetry where
    capping tightens it RETRY_GAIN times, the answer's reduced total is not 0 and ``retry`` (fewer than CAP_ROUNDS
    solves capped so far), else the certificate as it was."""
    from .certificate import check_rounding, judged

    capped, m = _cap_and_total(work, col_of_row, (u, v, certificate)), work.values.shape[1]
    if capped is None:
        return certificate
    cap, total = capped
    # the slacks already read, judged at eps(C), where they were read finer than it: duals far larger than C
    # (a solve at the inflated tolerance drifts them to the large costs' magnitude) round them past it
    if judged_at_cap(work) and check_rounding(u, v, 0.0) <= float_eps(m, cap):
        try:  # (host duals and columns: certified_result's copies)
            return judged(certificate.min_slack, certificate.max_assigned_slack, v, col_of_row, m,
                          float_eps(m, cap), engine, time.perf_counter() - certificate.ms / 1e3, certificate.where,
                          check_rounding(u, v, float_eps(m, cap)))
        except SolverError:
            pass
    # T = 0: the answer is optimal on its work as it stands, and a capped solve returns it again at a cap
    # 2^-30 tighter, whose duals again round past it (engine numpy, costs in [0, 2] whose optimum is the
    # identity: 34 solves, down to float64's smallest normal number, for one answer)
    if not retry or total <= 0 or _spread(work) <= RETRY_GAIN * cap:
        return certificate
    if not judged_at_cap(work):
        cap = _float32_cap(work, col_of_row)
        if cap is None:
            return certificate
    raise CapRetry(square, cap)


def _float32_cap(work, col_of_row) -> float | None:
    """C for unreduced float32 work from its row minima (one pass over the matrix), or None where the answer is
    exact as it is: every row at its least cost, or the tolerance below the spacing of the costs that matter. Those
    lie within C of their row's least, where float32 spaces them at least ulp(their least magnitude); every total
    over them is a multiple of the smallest such ulp, which the engine's error 2·k·eps then cannot reach (1e6 +
    U(0, 1) costs: spacing 2^-4 against eps 1e-7 would be solved twice for the same pairs)."""
    values = work.values
    xp = array_module(values)
    total, least = summed_total(values, col_of_row, unreduced=True)
    if total <= 0:
        return None
    cap = 2 * total
    # [least, least + C]'s distance to 0, over the rows whose costs differ: a constant row (the square's
    # zero padding under a rectangle) adds the same to every total
    distance = xp.maximum(xp.maximum(least, -xp.add(least, cap)), 0.0)
    varied = values.max(axis=1).astype(np.float64) > least
    nearest = float(xp.where(varied, distance, xp.inf).min())
    if nearest == math.inf:
        return None
    spacing = 2.0 ** max(math.floor(math.log2(nearest)) - 23, -149) if nearest > 0 else 2.0**-149
    return cap if 2 * values.shape[0] * work.eps >= spacing and keeps_optima(cap, total, values.shape) else None


def solved_capped(problem, run, retry: CapRetry, timeout: float | None, start: float, device):
    """``run(problem, timeout=, device=)`` again on work capped at ``retry.cap`` (its details say so:
    ``costs_capped_at``, and ``cost_cap_rounds``), and again while the answer's own cap tightens the
    tolerance RETRY_GAIN times more (at most CAP_ROUNDS solves), in the time ``timeout`` leaves after
    ``start``; past it, the last answer, proved at its looser tolerance (``costs_capped_at`` says why
    it was not solved again, or for an answer of capped work, the cap, and ``cost_cap_stopped`` why).
    The answer's steps are those of every solve, added (its total time counts them all)."""
    solved_on = None  # the cap retry.first was solved on (None: the caller's work)
    earlier = []  # the steps of the solves before retry.first's
    while True:
        problem.cap_work(retry.square, retry.cap)
        left = None if timeout is None else max(timeout - (time.perf_counter() - start), 1e-6)
        try:
            result = run(problem, timeout=left, device=device)
        except CapRetry as again:  # this answer's reduced total is far below the cap: capped tighter
            earlier.append(retry.first.steps)
            solved_on, retry = retry.cap, again
            continue
        except SolverError as error:
            if "time limit" not in str(error):
                raise
            retry.first.steps = summed(*earlier, retry.first.steps)
            stopped, details = f"not solved again: {error}", retry.first.details
            if solved_on is None:  # the caller's work's answer
                details["costs_capped_at"] = stopped
            else:
                details.update(costs_capped_at=solved_on, cost_cap_rounds=problem.cap_rounds - 1,
                               cost_cap_stopped=stopped)
            return retry.first
        result.steps = summed(*earlier, retry.first.steps, result.steps)
        result.details["costs_capped_at"] = retry.cap
        result.details["cost_cap_rounds"] = problem.cap_rounds
        return result
