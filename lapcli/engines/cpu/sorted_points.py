"""Engine ``sorted``: two 1-D point sets matched in sorted order, with duals that prove it (sets of
different sizes: lapcli.engines.cpu.sorted_band).

Why: on a line every metric here is a convex function of x − y (|x − y|, its square, its p-th
root of |x − y|^p; cosine a product of two monotone signs), so the costs between both sets taken in
increasing order form a Monge array: c(i, j) + c(i', j') ≤ c(i, j') + c(i', j) for i < i', j < j'.
Matching the k-th smallest row to the k-th smallest column is then optimal (Hoffman, "On simple
linear programming problems", 1963; Burkard, Klinz and Rudolf, "Perspectives of Monge properties
in optimization", 1996); maximising, the columns are taken in decreasing order instead. The point
auction, built for 2-D sets whose partners lie a few spacings apart, takes 8.4 s on 65,536 uniform
1-D points (H200, docs/points.md): on a line the optimum moves points ~√n spacings.

The duals follow the sorted pairs: v_0 = 0 and v_{k+1} = v_k + c(k+1, k+1) − c(k+1, k), u_k =
c(k, k) − v_k, which makes the pairs (k, k) and (k+1, k) tight and (k, k+1) feasible by the Monge
inequality; the Monge inequalities of all other pairs then make every reduced cost ≥ 0. That
argument holds for exact costs; the certificate reads all n² computed ones
(lapcli.points_certificate).
"""

from __future__ import annotations

import time

import numpy as np

from ...arrays import host
from ...cuda.probe import device_context
from ...errors import LapInputError
from ...points import costs
from ...steps import StepStat
from ..base import EngineResult
from .sorted_band import band_cells, band_pairs, chain_duals


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    raise LapInputError("solver 'sorted' matches two 1-D point sets (solve_points, lap solve --points); "
                        "a cost matrix has no coordinates to sort")


# The host pass's pairs by default (certify=None): ~1.5 s on a 2-core machine (65,536² pairs: 23 s).
HOST_CERTIFY_PAIRS = 1 << 28
# The band programme on the GPU from this many cells (lapcli.cuda.sorted_band): below, the host's
# ~25 ms are less than a launch's start.
DEVICE_BAND_FROM = 1 << 22
# kernels/sorted_band.cu indexes a row's band in int, a warp's segment past its end included: the
# host takes 2^30 columns or more.
DEVICE_BAND_COLUMNS = 1 << 30


def run_points(problem, *, timeout: float | None = None, device: int | None = None, progress=None,
               certify: bool | None = None) -> EngineResult:
    """The optimal pairs of a 1-D ``problem`` and their duals: sorted pairs for a square, the band
    programme for a rectangle (lapcli.engines.cpu.sorted_band); certified on all k·m costs
    (lapcli.points_certificate: on the GPU above 2²² of them), on the host by default up to
    HOST_CERTIFY_PAIRS of them (certify=True: any number; False: none)."""
    if not problem.along_a_line:
        why = ("minkowski below p = 1 rounds each cost up to 1/p times pow's error" if problem.metric == "minkowski"
               and problem.p < 1 else f"powers of their differences underflow under {problem.metric}, or a total of "
               "their costs can pass float64's range")
        why = (f"{why}, so the sorted pairs need not be optimal (auto solves them another way)" if problem.dim == 1 else
               f"these are {problem.n_rows} and {problem.n_cols} points of {problem.dim} dimensions")
        raise LapInputError(f"solver 'sorted' matches two 1-D point sets; {why}")
    began = time.perf_counter()
    rows, columns = (np.asarray(host(side), dtype=np.float64)[:, 0] for side in (problem.rows, problem.columns))
    row_order = np.argsort(rows, kind="stable")
    column_order = np.argsort(-columns if problem.maximize else columns, kind="stable")
    sorted_ms = (time.perf_counter() - began) * 1e3
    x, y = rows[row_order, None], columns[column_order, None]
    details = {"costs": f"{problem.metric_text} between 1-D points, matched in sorted order (Monge)"}
    k, m = len(x), len(y)
    if k == m:  # the k-th row with the k-th column
        paired = problem.sign * costs(x, y, problem.metric, problem.p)  # the work's c(k, k)
        below = problem.sign * costs(x[1:], y[:-1], problem.metric, problem.p)  # c(k + 1, k)
        v_sorted = np.concatenate(([0.0], np.cumsum(paired[1:] - below)))
        u_sorted, taken = paired - v_sorted, np.arange(k)
        gpu = None
        steps = [StepStat(1, "sort both sets", 2, sorted_ms)]
    else:  # the non-crossing pairs the band programme finds, on the GPU where one holds it
        taken, gpu = _band(x, y, problem, timeout, began, device, details)
        band_ms = (time.perf_counter() - began) * 1e3 - sorted_ms
        u_sorted, v_sorted = chain_duals(x, y, taken, problem.metric, problem.p, problem.sign)
        steps = [StepStat(1, "sort both sets", 2, sorted_ms),
                 StepStat(2, f"pairs in order over the band ({'GPU' if gpu else 'host'})", band_cells(k, m), band_ms)]
    col_of_row, u, v = np.empty(k, dtype=np.int64), np.empty(k), np.empty(m)
    col_of_row[row_order], u[row_order], v[column_order] = column_order[taken], u_sorted, v_sorted
    duals_ms = (time.perf_counter() - began) * 1e3 - sum(step.ms for step in steps)
    steps.append(StepStat(len(steps) + 1, "duals along the sorted pairs" if k == m else "duals along chains of pairs",
                          k, duals_ms))
    certificate = _certified(problem, col_of_row, u, v, timeout, began, device, certify, details)
    row_ind, col_ind = problem.assignment_from_work(col_of_row)
    duals = problem.duals_from_work(u, v) if certificate.get("checked") else None  # only proved duals leave
    return EngineResult(rows=row_ind, cols=col_ind, device=gpu or "cpu", dtype="float64", steps=steps, details=details,
                        duals=duals, certificate=certificate)


def band_on_device(k: int, m: int) -> bool:
    """Whether the band programme of k rows and m > k columns runs on the GPU: from
    DEVICE_BAND_FROM cells, below DEVICE_BAND_COLUMNS columns, where a CUDA device is here with
    room for its bits, of compute capability 8.0 or newer as the other point kernels (its grid
    barrier needs 6.0)."""
    from ...cuda.probe import search_kernel_status

    if not DEVICE_BAND_FROM <= band_cells(k, m) or m >= DEVICE_BAND_COLUMNS or not search_kernel_status()[0]:
        return False
    from ...cuda.probe import free_device_bytes
    from ...cuda.sorted_band import device_bytes

    return device_bytes(k, m) <= free_device_bytes() // 2


def _band(x, y, problem, timeout, began, device, details: dict) -> tuple[np.ndarray, str | None]:
    """(the band programme's columns, the GPU's name or None for the host): on the GPU
    (lapcli.cuda.sorted_band) where band_on_device, its compile time into ``details``."""
    k, m = len(x), len(y)
    with device_context(device):  # the room and capability of the GPU it would run on
        if not band_on_device(k, m):
            return band_pairs(x, y, problem.metric, problem.p, problem.sign, timeout, began), None
        from ...cuda.hungarian import device_name
        from ...cuda.sorted_band import band_pairs as device_band_pairs

        taken, compile_ms = device_band_pairs(x, y, problem.metric, problem.p, problem.sign, timeout, began)
        gpu = device_name()
    if compile_ms:
        details["compile_ms"] = round(compile_ms, 3)
    return taken, gpu


def _certified(problem, col_of_row, u, v, timeout, began, device, certify, details: dict) -> dict:
    """The certificate of the work's duals (every reduced cost read: lapcli.points_certificate), or
    why there is none (by default, a pass the time limit stopped: the pairs are optimal already, as
    the route that mirrors a problem keeps its pairs)."""
    from ...certificate import not_certified
    from ...errors import SolverError
    from ...points_certificate import certify_points, on_device, unchecked_past_the_limit

    if certify is False:
        return not_certified("certify=False")
    pairs = problem.n_rows * problem.n_cols
    if certify is None and pairs > HOST_CERTIFY_PAIRS and not on_device(problem):
        return not_certified(f"the host pass over {pairs:,} costs would take far longer than the sort (no GPU "
                             "here to stream it): certify=True runs it")
    try:
        return certify_points(problem, col_of_row, u, v, problem.tolerance(), "sorted", timeout=timeout, began=began,
                              device=device, details=details).to_dict()
    except SolverError as stopped:
        return not_certified(unchecked_past_the_limit(stopped, certify, "not checked"))
