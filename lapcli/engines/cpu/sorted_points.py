"""Engine ``sorted``: two 1-D point sets of equal size matched in sorted order, with duals that prove it.

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
argument holds for exact costs; the certificate reads all n² computed ones, on the GPU where the
point kernels run (lapcli.cuda.points.row_min, one streamed pass), else on the host in row chunks.
"""

from __future__ import annotations

import time

import numpy as np

from ...arrays import host
from ...errors import LapInputError, SolverError
from ...points import HOST_CHUNK_PAIRS, costs
from ...steps import StepStat
from ..base import EngineResult


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    raise LapInputError("solver 'sorted' matches two 1-D point sets (solve_points, lap solve --points); "
                        "a cost matrix has no coordinates to sort")


# The host pass's pairs by default (certify=None): ~1.5 s on a 2-core machine (65,536² pairs: 23 s).
HOST_CERTIFY_PAIRS = 1 << 28
# Up to here the host reads the pairs even where a GPU could (~20 ms): the device pass's program may
# still need compiling, seconds for a problem that takes microseconds.
HOST_PASS_UP_TO = 1 << 22


def run_points(problem, *, timeout: float | None = None, device: int | None = None, progress=None,
               certify: bool | None = None) -> EngineResult:
    """The sorted pairs of a square 1-D ``problem`` and their duals, certified on all n² costs: on
    the GPU above HOST_PASS_UP_TO of them, on the host below, and there by default up to
    HOST_CERTIFY_PAIRS of them (certify=True: any number; False: none)."""
    if not problem.on_a_line:  # a rectangle leaves columns free, which sorting does not choose
        raise LapInputError(f"solver 'sorted' matches two 1-D point sets of equal size; these are "
                            f"{problem.n_rows} and {problem.n_cols} points of {problem.dim} dimensions")
    began = time.perf_counter()
    rows, columns = (np.asarray(host(side), dtype=np.float64)[:, 0] for side in (problem.rows, problem.columns))
    row_order = np.argsort(rows, kind="stable")
    column_order = np.argsort(-columns if problem.maximize else columns, kind="stable")
    sorted_ms = (time.perf_counter() - began) * 1e3
    x, y = rows[row_order, None], columns[column_order, None]
    paired = problem.sign * costs(x, y, problem.metric, problem.p)  # the work's c(k, k)
    below = problem.sign * costs(x[1:], y[:-1], problem.metric, problem.p)  # c(k + 1, k)
    v_sorted = np.concatenate(([0.0], np.cumsum(paired[1:] - below)))
    u_sorted = paired - v_sorted
    n = problem.n_rows
    col_of_row, u, v = np.empty(n, dtype=np.int64), np.empty(n), np.empty(n)
    col_of_row[row_order], u[row_order], v[column_order] = column_order, u_sorted, v_sorted
    duals_ms = (time.perf_counter() - began) * 1e3 - sorted_ms
    details = {"costs": f"{problem.metric} between 1-D points, matched in sorted order (Monge)"}
    certificate = _certified(problem, col_of_row, u, v, timeout, began, device, certify, details)
    row_ind, col_ind = problem.assignment_from_work(col_of_row)
    steps = [StepStat(1, "sort both sets", 2, sorted_ms), StepStat(2, "duals along the sorted pairs", n, duals_ms)]
    duals = problem.duals_from_work(u, v) if certificate.get("checked") else None  # only proved duals leave
    return EngineResult(rows=row_ind, cols=col_ind, device="cpu", dtype="float64", steps=steps, details=details,
                        duals=duals, certificate=certificate)


def _certified(problem, col_of_row, u, v, timeout, began, device, certify, details: dict) -> dict:
    """The certificate of the work's duals (every reduced cost read; lapcli.certificate), or why
    there is none; the device pass's compile time goes to ``details``."""
    from ...certificate import judged, not_certified
    from ...cuda.probe import search_kernel_status

    if certify is False:
        return not_certified("certify=False")
    pairs = problem.n_rows * problem.n_cols
    on_device = pairs > HOST_PASS_UP_TO and search_kernel_status()[0]
    if not on_device and certify is None and pairs > HOST_CERTIFY_PAIRS:
        return not_certified(f"the host pass over {pairs:,} costs would take far longer than the sort (no GPU "
                             "here to stream it): certify=True runs it")
    start = time.perf_counter()
    x = np.asarray(host(problem.rows), dtype=np.float64)
    y = np.asarray(host(problem.columns), dtype=np.float64)
    assigned = problem.sign * costs(x, y[col_of_row], problem.metric, problem.p) - u - v[col_of_row]
    if on_device:
        (least, details["compile_ms"]), where = _device_least_slack(problem, u, v, device), "device"
    else:
        least, where = _host_least_slack(problem, x, y, u, v, timeout, began), "host"
    return judged(least, np.abs(assigned).max(), v, col_of_row, problem.n_cols, problem.tolerance(), "sorted",
                  start, where).to_dict()


def _device_least_slack(problem, u, v, device) -> tuple[float, float]:
    """(min over all pairs of c − u − v, ms compiling the pass's program) by the point kernels'
    streamed row pass (no matrix)."""
    import cupy

    from ...cuda import points as device_points

    with cupy.cuda.Device(device if device is not None else cupy.cuda.runtime.getDevice()):
        points = device_points.upload(problem, "search")
        minima, _ = device_points.row_min(points, cupy.asarray(v))
        return float((minima - cupy.asarray(u)).min()), round(points.compile_ms, 3)


def _host_least_slack(problem, x, y, u, v, timeout, began) -> float:
    """min over all pairs of c − u − v on the host, a chunk of rows at a time (~32 MB each)."""
    n, m = len(x), len(y)
    step = max(1, HOST_CHUNK_PAIRS // max(m, 1))
    least = np.inf
    for first in range(0, n, step):
        if timeout is not None and time.perf_counter() - began > timeout:
            raise SolverError(f"the sorted engine's certificate ran past the time limit: {first:,} of {n:,} "
                              "rows read")
        block = problem.sign * costs(x[first:first + step, None, :], y[None, :, :], problem.metric, problem.p)
        block -= u[first:first + step, None]
        block -= v[None, :]
        least = min(least, float(block.min()))
    return least
