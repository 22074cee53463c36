"""Engine ``cuda-sap``: shortest augmenting paths (Jonker–Volgenant) from a start that leaves few
rows free and short searches: in one thread block up to 2048 columns (kernels/batch_lap.cu), each
search spread over one thread-block cluster above (kernels/sap.cu, lapcli.cuda.sap_cluster;
docs/design.md has both layouts' measurements).

Why: the classical phases pay a grid-wide dual update (step 6) per new zero, and on squared
distances and the widest integer ranges they still need thousands of them. A shortest-path search
needs no grid barrier: each of its steps is one row read and one argmin over the columns (~1 µs in
a block, 2–3 µs over a cluster), so its time is its steps, and the start decides how many there are.
The classical kernel stays faster where zeros are many (low ranges), and ``auto`` chooses between
them by measurement (engines/auto.py).

A square problem up to ONE_BLOCK_UP_TO columns: two launches on one stream, nothing copied between:
  1. kernels/hungarian.cu with ``start_only``: Jonker–Volgenant's augmenting row reduction as
     parallel rounds (the twin's numpy_hungarian.auction_start), leaving v and a partial
     assignment whose every row is tight at a minimum of c − v over its row;
  2. the searches from that warm start (lapcli.cuda.batch_lap.solve_stack): a Dijkstra per free
     row, the dual update, the augmentation; u = c − v on the assignment.
A larger square: Bertsekas' auction with ε-scaling on the work matrix (kernels/auction.cu, the
kernels of point sets on a dense source; Guthe–Thuerck 2021 start their searches the same way).
Floats run it down to an ε below the certificate's tolerance: its duals are the answer's. Integers
run it down to ε = 1/(4n), where its assignment is optimal; its duals floored to integers leave
almost every row exactly tight, and kernels/sap.cu searches from the others (integer duals, an
exact certificate). Past its time budget the auction stops and hands over whatever duals it has:
the searches are exact from any duals, so a slow auction costs its budget, never the answer.
A k × m problem (k < m, a tall one transposed) is solved as it is: no auction (it needs a square),
every row searched from v = 0, by the same two search kernels.
Two point sets (``run_points``) are solved on costs computed from the coordinates
(lapcli.cuda.points): the matrix is never stored. A square of AUCTION_FROM points or more, minimised,
goes to the ε-scaling auction, the others to kernels/sap.cu.
The starts live in lapcli.engines.cuda.sap_start. The twins (lapcli.twins: sap_twin, auction_twin,
hand_over) are the NumPy specifications; the certificate proves every answer.
"""

from __future__ import annotations

from ...cuda import auction, passes, sap_cluster
from ...cuda.batch_lap import MAX_COLUMNS, STATUS_MESSAGES, solve_stack
from ...cuda.hungarian import check_memory_before_upload, check_result, device_name, device_work
from ...cuda.hungarian_abi import BLOCKS_PER_SM
from ...cuda.runtime import Event, current_gpu, current_stream
from ...errors import LapInputError, SolverError
from ...steps import AUCTION_PATIENCE, AUCTION_ROUNDS, StepStat
from ..base import EngineResult, certified_result
from .sap_start import (
    AUCTION_EPS_OF_TOLERANCE,
    ScaledAuction,
    column_reduction_start,
    launch_auction,
    rows_take_lowest_column,
    scaled_auction,
    uses_scaled_auction,
)

STEPS = (
    (1, "start: auction"),  # rounds run
    (2, "shortest augmenting paths"),  # searches (the rows the auction left free)
)
# Up to here the searches run in one block (kernels/batch_lap.cu, its registers hold the columns);
# above, in one thread-block cluster (kernels/sap.cu).
ONE_BLOCK_UP_TO = MAX_COLUMNS


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    """Solve one square (padded) problem whose columns fit a cluster's shared memory
    (lapcli.cuda.sap_cluster.max_columns); device inputs stay where they are, host inputs go
    through lapcli.cuda.staging, as for engine ``cuda``."""
    return solve(problem, timeout=timeout, device=device)


def solve(problem, *, timeout: float | None = None, device: int | None = None,
          auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """``run`` with the auction's round cap: 0 (as n = 1) launches no auction, and the search
    kernel starts from its column reduction, as the twin does (the GPU tests compare the two)."""
    import time

    import cupy

    with cupy.cuda.Device(device if device is not None else cupy.cuda.runtime.getDevice()):
        if problem.n_rows != problem.n_cols:
            return solve_rectangular(problem, timeout=timeout)
        if problem.size > ONE_BLOCK_UP_TO:
            return solve_on_cluster(problem, timeout=timeout, auction_rounds=auction_rounds)
        began = time.perf_counter()
        stream = current_stream()
        current_gpu()  # its context current on this thread, for the events
        start, copied_in, copied_out = (Event() for _ in range(3))
        check_memory_before_upload(problem, BLOCKS_PER_SM)
        start.record(stream)
        work = device_work(problem)
        copied_in.record(stream)
        size = problem.size
        auction = (launch_auction(problem, work, timeout, auction_rounds, AUCTION_PATIENCE, stream)
                   if auction_rounds and size > 1 else None)
        if timeout:  # the search gets what is left (the auction is bounded by its rounds)
            timeout = max(timeout - (time.perf_counter() - began), 1e-3)
        warm_start = None
        if auction is not None:
            warm_start = (auction.state["v"].reshape(1, size), auction.state["column_of_star_at_row"].reshape(1, size))
        result = solve_stack(work.values.reshape(1, size, size), work.eps, timeout=timeout, synchronize=False,
                             warm_start=warm_start)
        # the copies wait for both launches (one stream): three copies back in all, no other sync
        rounds, auction_ms, searches = auction.finish() if auction is not None else (0, 0.0, None)
        col_of_row, u, v, stack_status = (array[0] for array in result.to_host())
        copied_out.record(stream)
        copied_out.synchronize()
        if searches is None:  # no auction: the kernel's column reduction took each column's lowest row
            searches = size - int(cupy.unique(work.values.reshape(size, size).argmin(axis=0)).size)
        if stack_status != 0:
            raise SolverError(STATUS_MESSAGES.get(int(stack_status), f"the search kernel ended with status {stack_status}"))
        check_result(0, col_of_row)  # a permutation (the certificate checks the duals)
        search_begin, search_end = result.details["events"]
        search_ms = search_end.ms_since(search_begin)  # the search launch alone (its compile is not in it)
        auction_launch_ms = auction.events[1].ms_since(auction.events[0]) if auction is not None else 0.0
        details = {
            "grid": auction.plan.blocks if auction is not None else 0,
            "block": auction.plan.block_size if auction is not None else 0,
            "compile_ms": round((auction.compile_ms if auction is not None else 0.0) + result.details["compile_ms"], 3),
            "h2d_ms": round(copied_in.ms_since(start), 3),
            "kernel_ms": round(auction_launch_ms + search_ms, 3),
            "d2h_ms": round(copied_out.ms_since(search_end), 3),
            "launches": 2 if auction is not None else 1,
            "auction_rounds": rounds,
            "search_layout": result.details["layout"],
        }
        steps = [StepStat(1, STEPS[0][1], rounds, auction_ms), StepStat(2, STEPS[1][1], searches, search_ms)]
        return certified_result(problem, work, result.col_of_row[0], result.u[0], result.v[0], engine="cuda-sap",
                                device=device_name(), steps=steps, details=details, host_copies=(col_of_row, u, v))


def solve_on_cluster(problem, *, timeout: float | None, auction_rounds: int) -> EngineResult:
    """A square problem above ONE_BLOCK_UP_TO columns, on the current device: the ε-scaling auction
    on the work matrix (:func:`scaled_auction`), then kernels/sap.cu's searches from its duals for
    the rows it does not leave exactly tight. ``auction_rounds`` 0: no auction, the searches from
    the column reduction (the twin's start: the GPU tests compare the two)."""
    import time

    import cupy

    began = time.perf_counter()
    size = problem.size
    _check_clusters(size)
    stream = current_stream()
    current_gpu()
    start, copied_in, auctioned, copied_out = (Event() for _ in range(4))
    check_memory_before_upload(problem, BLOCKS_PER_SM)
    start.record(stream)
    work = device_work(problem)
    copied_in.record(stream)
    found = scaled_auction(work, timeout) if auction_rounds and uses_scaled_auction(work) else None
    auctioned.record(stream)
    details = {"start": "column reduction"}
    if found is None:
        v_start, col_start = column_reduction_start(work.values)
        compile_ms = 0.0
    else:
        compile_ms = found.compile_ms
        details.update(found.details())
        if found.complete and not work.exact:  # its duals are the certificate's: no search
            return _auction_answer(problem, work, found, details, (start, copied_in, auctioned, copied_out))
        v_start, col_start = found.hand_over()
        details["free_after_auction"] = int((col_start < 0).sum())
        details["launches"] += 2  # the hand-over's passes
    if timeout:
        timeout = max(timeout - (time.perf_counter() - began), 1e-3)
    result = sap_cluster.solve(work.values, v_start, col_start, timeout=timeout)
    cols = result.col_of_row
    u = work.values[cupy.arange(size), cols].astype(result.v.dtype) - result.v[cols]
    stats = result.checked_stats()
    host = (cols.get(), u.get(), result.v.get())
    copied_out.record(stream)
    copied_out.synchronize()
    check_result(0, host[0])
    search_begin, search_end = result.events
    search_ms = search_end.ms_since(search_begin)
    auction_ms = auctioned.ms_since(copied_in) if found is not None else 0.0
    details.update({
        "compile_ms": round(compile_ms + result.compile_ms, 3),
        "h2d_ms": round(copied_in.ms_since(start), 3),
        "kernel_ms": round(auction_ms + search_ms, 3),
        "d2h_ms": round(copied_out.ms_since(search_end), 3),
        "search_layout": f"cluster of {sap_cluster.CLUSTER} x {sap_cluster.THREADS}",
        "search_steps": stats["steps"],
        "launches": details.get("launches", 0) + 1,
    })
    steps = [StepStat(1, STEPS[0][1], len(found.result.phases) if found is not None else 0, auction_ms),
             StepStat(2, STEPS[1][1], stats["searches"], search_ms)]
    return certified_result(problem, work, cols, u, result.v, engine="cuda-sap", device=device_name(),
                            steps=steps, details=details, host_copies=host)


def _auction_answer(problem, work, found: ScaledAuction, details: dict, events: tuple) -> EngineResult:
    """A float problem the auction finished: u = c − v on its assignment, certified as it is."""
    start, copied_in, auctioned, copied_out = events
    n = work.values.shape[0]
    cols, v = found.result.col_of_row, found.result.v
    u = passes.pair_costs(found.kernels, found.source, n, cols) - v[cols]
    host = (cols.get(), u.get(), v.get())
    copied_out.record(current_stream())
    copied_out.synchronize()
    check_result(0, host[0])
    auction_ms = auctioned.ms_since(copied_in)
    details.update({"compile_ms": round(found.compile_ms, 3), "h2d_ms": round(copied_in.ms_since(start), 3),
                    "kernel_ms": round(auction_ms, 3), "d2h_ms": round(copied_out.ms_since(auctioned), 3),
                    "search_steps": 0, "launches": details["launches"] + 1})
    steps = [StepStat(1, STEPS[0][1], len(found.result.phases), auction_ms), StepStat(2, STEPS[1][1], 0, 0.0)]
    return certified_result(problem, work, cols, u, v, engine="cuda-sap", device=device_name(), steps=steps,
                            details=details, host_copies=host)


def solve_rectangular(problem, *, timeout: float | None) -> EngineResult:
    """A k × m problem (k < m once a tall one is transposed) as it is, not padded to m × m: the
    searches from v = 0 and every row free (no auction: it needs a square matrix), in one block up
    to ONE_BLOCK_UP_TO columns, over a cluster above. v stays ≤ 0 and 0 on the columns no row
    takes, as the certificate of a rectangular problem asks."""
    import cupy

    from ...cuda.hungarian import check_device_memory, upload
    from ...work import WorkMatrix

    stream = current_stream()
    current_gpu()
    start, copied_in, copied_out = (Event() for _ in range(3))
    # the upload (a host input), the work matrix (8 bytes an entry at most) and a temporary of it
    uploaded = 0 if problem.xp is cupy else problem.original.nbytes
    check_device_memory(uploaded + 2 * 8 * problem.n_rows * problem.n_cols)
    if problem.size > ONE_BLOCK_UP_TO:
        _check_clusters(problem.size)
    start.record(stream)
    source = problem.original if problem.xp is cupy else upload(problem.original)
    problem.check_entries_on(source, cupy)
    work = problem.work_stack(cupy, source=source)  # (1, k, m), k < m
    values = cupy.ascontiguousarray(work.values[0])
    k, m = values.shape
    offsets = [None if o is None else cupy.asnumpy(o[0]) for o in (work.row_offset, work.col_offset)]
    matrix = WorkMatrix(values, work.eps(0), offsets[0], offsets[1], list(work.notes))
    copied_in.record(stream)
    if m <= ONE_BLOCK_UP_TO:
        result = solve_stack(values[None], matrix.eps, timeout=timeout, synchronize=False)
        cols, u, v = result.col_of_row[0], result.u[0], result.v[0]
        events, layout, compile_ms = result.details["events"], result.details["layout"], result.details["compile_ms"]
    else:
        result = sap_cluster.solve(values, timeout=timeout)
        cols, v = result.col_of_row, result.v
        u = values[cupy.arange(k), cols].astype(v.dtype) - v[cols]
        events, compile_ms = result.events, result.compile_ms
        layout = f"cluster of {sap_cluster.CLUSTER} x {sap_cluster.THREADS}"
    host = (cols.get(), u.get(), v.get())
    stats = result.checked_stats() if m > ONE_BLOCK_UP_TO else {}
    copied_out.record(stream)
    copied_out.synchronize()
    if m <= ONE_BLOCK_UP_TO and (status_word := int(result.status.get()[0])) != 0:
        raise SolverError(STATUS_MESSAGES.get(status_word, f"the search kernel ended with status {status_word}"))
    check_result(0, host[0])
    search_ms = events[1].ms_since(events[0])
    details = {"compile_ms": round(compile_ms, 3), "h2d_ms": round(copied_in.ms_since(start), 3),
               "kernel_ms": round(search_ms, 3), "d2h_ms": round(copied_out.ms_since(events[1]), 3),
               "launches": 1, "auction_rounds": 0, "search_layout": layout, "rectangular": f"{k}x{m}"}
    if stats:
        details["search_steps"] = stats["steps"]
    searches = stats.get("searches", k)
    steps = [StepStat(1, STEPS[0][1], 0, 0.0), StepStat(2, STEPS[1][1], searches, search_ms)]
    return certified_result(problem, matrix, cols, u, v, engine="cuda-sap", device=device_name(),
                            steps=steps, details=details, host_copies=host)


def run_points(problem, *, timeout: float | None = None, device: int | None = None,
               progress=None) -> EngineResult:
    """Two point sets (lapcli.points.PointProblem), their costs computed from the coordinates
    wherever a kernel reads one (lapcli.cuda.points): no k × m matrix exists, device memory is
    O((k + m)·d) plus O(m) of state. A square problem of AUCTION_FROM points or more, minimised,
    is solved by the ε-scaling auction (lapcli.cuda.auction) down to an ε below the certificate's
    tolerance; the others by the shortest augmenting paths over one thread-block cluster. One
    more streamed pass over all k·m costs is the certificate. ``progress(phase, phases_left)``
    follows the auction's phases."""
    import time

    import cupy

    from ...certificate import judged
    from ...cuda import points as device_points

    with cupy.cuda.Device(device if device is not None else cupy.cuda.runtime.getDevice()):
        k, m = sorted((problem.n_rows, problem.n_cols))
        by_auction = auction.solves(k, m, problem.maximize)
        # the searches need a cluster's room; the auction (its 128-bit swaps) Hopper only
        _check_clusters(0 if by_auction else m, "on point sets")
        stream = current_stream()
        current_gpu()
        start, copied_in, solved, certified = (Event() for _ in range(4))
        start.record(stream)
        points = device_points.upload(problem, "auction" if by_auction else "search")
        copied_in.record(stream)
        details = {
            "costs": f"{problem.metric} from {problem.dim}-D coordinates (computed where read, no matrix)",
            "compile_ms": round(points.compile_ms, 3),
        }
        if by_auction:
            cols, v, steps, launches = _points_auction(problem, points, details, timeout, progress)
        else:
            cols, v, steps, launches = _points_searches(points, details, timeout)
        solved.record(stream)
        checking = time.perf_counter()
        host_cols = cols.get()
        check_result(0, host_cols)  # a permutation, before any pass reads a pair through it
        pair = device_points.pair_costs(points, cols)
        u = pair - v[cols]
        minima, _ = device_points.row_min(points, v)
        host = (host_cols, u.get(), v.get())
        certificate = judged((minima - u).min(), cupy.abs(pair - u - v[cols]).max(), v, cols, m,
                             problem.tolerance(), "cuda-sap", checking, "device")
        certified.record(stream)
        certified.synchronize()
        details.update({"h2d_ms": round(copied_in.ms_since(start), 3),
                        "kernel_ms": round(solved.ms_since(copied_in), 3), "launches": launches + 3})
        if k < m:
            details["rectangular"] = f"{k}x{m}"
        rows, cols_caller = problem.assignment_from_work(host[0])
        return EngineResult(rows=rows, cols=cols_caller, device=device_name(), dtype="float64", steps=steps,
                            details=details, duals=problem.duals_from_work(host[1], host[2]),
                            certificate=certificate.to_dict())


def _points_auction(problem, points, details: dict, timeout, progress):
    """The square point problem by the ε-scaling auction: (col_of_row, v, steps, launches)."""
    found = auction.solve(points.kernels, points.source(), points.k, problem.tolerance() * AUCTION_EPS_OF_TOLERANCE,
                          timeout=timeout, progress=progress)
    details.update(found.details())
    # a step per phase: its bids and its time (the release pass included)
    steps = [StepStat(index + 1, f"auction, eps {phase.eps:.3g}", phase.bids, phase.ms)
             for index, phase in enumerate(found.phases)]
    return found.col_of_row, found.v, steps, found.launches


def _points_searches(points, details: dict, timeout):
    """A point problem by the cluster searches: a square one from Jonker–Volgenant's column
    reduction (one streamed pass, sides swapped: v[j] = min_i c(i, j), each column's lowest row
    takes it), a k × m one (k < m) from v = 0 with every row free. (col_of_row, v, steps, launches)."""
    from ...cuda import points as device_points

    stream = current_stream()
    begin, reduced = Event(), Event()
    begin.record(stream)
    v_start = col_start = None
    if points.k == points.m:
        v_start, lowest_row = device_points.row_min(points, swapped=True)
        col_start = rows_take_lowest_column(lowest_row, points.k)
    reduced.record(stream)
    result = device_points.search(points, v_start, col_start, timeout=timeout)
    stats = result.checked_stats()  # waits for the search
    search_begin, search_end = result.events
    details.update({"start": "column reduction" if col_start is not None else "every row free",
                    "search_layout": f"cluster of {sap_cluster.CLUSTER} x {sap_cluster.THREADS}",
                    "search_steps": stats["steps"]})
    assigned = 0 if col_start is None else points.k - stats["searches"]
    steps = [StepStat(1, f"start: {details['start']}", assigned, reduced.ms_since(begin)),
             StepStat(2, STEPS[1][1], stats["searches"], search_end.ms_since(search_begin))]
    return result.col_of_row, result.v, steps, 1 + (col_start is not None)


def _check_clusters(columns: int, what: str = f"above {ONE_BLOCK_UP_TO} columns") -> None:
    """Refuse what the cluster kernel cannot run here: no thread-block clusters, that is no Hopper
    (SolverUnavailable), or more than ``columns`` (0: no limit to check) than a cluster holds on
    this GPU (bad input for the named solver; auto never sends such a problem here)."""
    from ...cuda.probe import cluster_kernel_status
    from ...errors import SolverUnavailable

    clusters, why = cluster_kernel_status()
    if not clusters:
        raise SolverUnavailable(f"solver 'cuda-sap' {what} cannot run here: {why}")
    limit = sap_cluster.device_max_columns()
    if columns and columns > limit:
        raise LapInputError(f"solver 'cuda-sap' takes at most {limit} columns on this GPU, not {columns} "
                            "(use 'cuda' or 'auto')")
