"""The certificate of an answer to two point sets, read from their coordinates (lapcli.certificate's
checks, no matrix stored): every reduced cost sign·c(i, j) − u_i − v_j of the work (the problem's
``rows`` × ``columns``) ≥ −tolerance, and the assigned pairs' within it. On the GPU, where the point
kernels run, one streamed pass (lapcli.cuda.points.row_min); else on the host in row chunks, which
costs n·m cost evaluations (65,536² pairs: 23 s on a 2-core machine).
"""

from __future__ import annotations

import time

import numpy as np

from .arrays import host
from .certificate import Certificate, check_rounding, judged
from .errors import SolverError
from .points import HOST_CHUNK_PAIRS, costs

# Up to here the host reads the pairs even where a GPU could (~20 ms): the device pass's program may
# still need compiling, seconds for a problem that takes microseconds.
HOST_PASS_UP_TO = 1 << 22


def on_device(problem) -> bool:
    """Whether :func:`certify_points` reads ``problem``'s pairs on the GPU."""
    from .cuda.probe import search_kernel_status

    return problem.n_rows * problem.n_cols > HOST_PASS_UP_TO and search_kernel_status()[0]


PAST_TIME_LIMIT = "the certificate's pass ran past the time limit"


def check_time_left(timeout: float | None, began: float, read: int, rows: int) -> None:
    """SolverError saying how far the certificate's pass got (``read`` of ``rows``) once ``timeout``
    seconds have passed since ``began``; nothing without a limit."""
    if timeout is not None and time.perf_counter() - began > timeout:
        raise SolverError(f"{PAST_TIME_LIMIT}: {read:,} of {rows:,} rows read")


def unchecked_past_the_limit(stopped: SolverError, certify: bool | None, what: str) -> str:
    """Why an answer keeps no certificate where its pass stopped at the time limit and ``certify`` was
    left to its default (the pairs are optimal before the pass: they come back, unchecked); any other
    failure, or certify=True, raises ``stopped``."""
    if certify or PAST_TIME_LIMIT not in str(stopped):
        raise stopped
    return f"{what}: {stopped} (certify=True makes it an error)"


def certify_points(problem, col_of_row, u, v, tolerance: float, engine: str, *, timeout: float | None = None,
                   began: float = 0.0, device: int | None = None, details: dict | None = None) -> Certificate:
    """Check the work's duals ``u``, ``v`` (host float64, the work's rows and columns) for its
    assignment ``col_of_row`` (host int64, a column for every work row); SolverError naming
    ``engine`` when they fail. The host pass stops past ``timeout`` seconds after ``began``, and the
    device pass (one launch) does not begin past it; its compile time goes to ``details["compile_ms"]``."""
    start = time.perf_counter()
    x = np.asarray(host(problem.rows), dtype=np.float64)
    y = np.asarray(host(problem.columns), dtype=np.float64)
    assigned = problem.sign * costs(x, y[col_of_row], problem.metric, problem.p) - u - v[col_of_row]
    if on_device(problem):
        check_time_left(timeout, began, 0, len(x))
        least, compile_ms = _device_least_slack(problem, u, v, device)
        where = "device"
        if details is not None:  # beside any the solve had
            details["compile_ms"] = round((details.get("compile_ms") or 0.0) + compile_ms, 3)
    else:
        least, where = _host_least_slack(problem, x, y, u, v, timeout, began), "host"
    return judged(least, np.abs(assigned).max(), v, col_of_row, len(v), tolerance, engine, start, where,
                  check_rounding(u, v, tolerance))


def _device_least_slack(problem, u, v, device) -> tuple[float, float]:
    """(min over all pairs of c − u − v, ms compiling the pass's program) by the point kernels'
    streamed row pass (no matrix)."""
    import cupy

    from .cuda import points as device_points

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
        check_time_left(timeout, began, first, n)
        block = problem.sign * costs(x[first:first + step, None, :], y[None, :, :], problem.metric, problem.p)
        block -= u[first:first + step, None]
        block -= v[None, :]
        least = min(least, float(block.min()))
    return least
