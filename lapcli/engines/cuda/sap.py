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

A square problem up to ONE_BLOCK_UP_TO columns (below SCALED_AUCTION_FROM_FLOATS columns for
minimised floats): two launches on one stream, nothing copied between:
  1. kernels/hungarian.cu with ``start_only``: Jonker–Volgenant's augmenting row reduction as
     parallel rounds (the twin's numpy_hungarian.auction_start), leaving v and a partial
     assignment whose every row is tight at a minimum of c − v over its row;
  2. the searches from that warm start (lapcli.cuda.batch_lap.solve_stack): a Dijkstra per free
     row, the dual update, the augmentation; u = c − v on the assignment.
A larger square (minimised floats from SCALED_AUCTION_FROM_FLOATS): Bertsekas' auction with
ε-scaling on the work matrix (kernels/auction.cu, the kernels of point sets on a dense source;
Guthe–Thuerck 2021 start their searches the same way), each eviction chain cut after
chain_limit(n) bids. Integers run it down to ε = 1/(4n); its duals floored leave almost every row
exactly tight. Floats run it down to an ε below the certificate's tolerance: an auction that ends
with every row assigned is the answer (its duals are the certificate's); the rows a chain limit
left free in the last phase are searched from its duals, every other row kept within 2ε with its
pair's cost lowered to its row's minimum while they run (sap_start.ScaledAuction.hand_over). The
searches, in one block or over a cluster (kernels/sap.cu) by the columns, are exact from any
duals: past its time budget the auction hands over whatever duals it has, so a slow auction
costs its budget, never the answer.
A k × m problem (k < m, a tall one transposed) is solved as it is: no auction (it needs a square),
every row searched from v = 0, by the same two search kernels.
Two point sets (``run_points``, lapcli.engines.cuda.sap_points) are solved on costs computed from
the coordinates (lapcli.cuda.points): the matrix is never stored (a sample's, for the auction's
warm start, is: lapcli.engines.cuda.sap_warm).
The starts live in lapcli.engines.cuda.sap_start. The twins (lapcli.twins: sap_twin, auction_twin,
hand_over) are the NumPy specifications; the certificate proves every answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...cuda import passes, sap_cluster
from ...cuda.batch_lap import MAX_COLUMNS, STATUS_MESSAGES, solve_stack
from ...cuda.hungarian import (
    check_memory_before_upload,
    check_result,
    device_name,
    device_work,
)
from ...cuda.hungarian_abi import BLOCKS_PER_SM
from ...cuda.runtime import Event, current_gpu, current_stream
from ...errors import SolverError
from ...steps import AUCTION_PATIENCE, AUCTION_ROUNDS, SAP_STEP_NAMES, StepStat
from ..base import EngineResult, certified_result
from . import sap_points
from .sap_room import check_clusters
from .sap_start import (
    ScaledAuction,
    column_reduction_start,
    launch_auction,
    scaled_auction,
    uses_scaled_auction,
)

# Up to here the searches run in one block (kernels/batch_lap.cu, its registers hold the columns);
# above, in one thread-block cluster (kernels/sap.cu).
ONE_BLOCK_UP_TO = MAX_COLUMNS
# From these many columns a square in the one-block range starts from the ε-scaling auction, not
# the augmenting row reduction (above ONE_BLOCK_UP_TO it always does). H200, host -> host ms,
# medians over two matrices, row reduction / scaled auction: floats at 2048 squared distances
# 81 / 38 (float64), 79 / 63 (float32), U[0, 1) 21 / 21; at 1536 squared distances 66 / 55, U[0, 1)
# 15 / 20. Integers at 2048: squared distances 59 / 51, uniform R = 100 and 1000 17 / 18, 19 / 22.
SCALED_AUCTION_FROM_FLOATS = 2048
SCALED_AUCTION_FROM_INTEGERS = ONE_BLOCK_UP_TO + 1


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    """Solve one square (padded) problem whose columns fit a cluster's shared memory
    (lapcli.cuda.sap_cluster.max_columns); device inputs stay where they are, host inputs go
    through lapcli.cuda.staging, as for engine ``cuda``."""
    return solve(problem, timeout=timeout, device=device)


def run_points(problem, *, timeout: float | None = None, device: int | None = None, progress=None,
               certify: bool | None = None) -> EngineResult:
    """The engine's entry for two point sets (lapcli.engines.cuda.sap_points.run_points), whose
    auction's warm start solves its sample's matrix here (:func:`solve`). Its certificate, one
    streamed pass on the device, always runs (``certify`` is for engines whose pass costs more
    than their solve)."""
    return sap_points.run_points(problem, timeout=timeout, device=device, progress=progress, solve_matrix=solve)


def solve(problem, *, timeout: float | None = None, device: int | None = None,
          auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """``run`` with the auction's round cap: 0 (as n = 1) launches no auction, and the searches
    start from the column reduction, as the twin does (the GPU tests compare the two)."""
    import time

    import cupy

    with cupy.cuda.Device(device if device is not None else cupy.cuda.runtime.getDevice()):
        if problem.n_rows != problem.n_cols:
            return solve_rectangular(problem, timeout=timeout)
        began = time.perf_counter()
        if problem.size > ONE_BLOCK_UP_TO:
            check_clusters(problem.size, f"above {ONE_BLOCK_UP_TO} columns")
        stream = current_stream()
        current_gpu()  # its context current on this thread, for the events
        start, copied_in = Event(), Event()
        check_memory_before_upload(problem, BLOCKS_PER_SM)
        start.record(stream)
        work = device_work(problem)
        copied_in.record(stream)
        if problem.size > ONE_BLOCK_UP_TO or (auction_rounds and not problem.maximize
                                               and starts_from_scaled_auction(work)):
            return _after_scaled_auction(problem, work, timeout, auction_rounds, began, (start, copied_in))
        return _after_row_reduction(problem, work, timeout, auction_rounds, began, (start, copied_in))


def starts_from_scaled_auction(work) -> bool:
    """Whether a minimised square work matrix up to ONE_BLOCK_UP_TO columns starts its one-block
    searches from the ε-scaling auction rather than the augmenting row reduction: from
    SCALED_AUCTION_FROM_FLOATS (SCALED_AUCTION_FROM_INTEGERS) columns, where the auction takes
    (lapcli.engines.cuda.sap_start.uses_scaled_auction). Maximised costs keep the row reduction:
    maximised distances make the auction's prices climb far (its budget, 0.5 s, would be spent)."""
    from_columns = SCALED_AUCTION_FROM_INTEGERS if work.exact else SCALED_AUCTION_FROM_FLOATS
    return work.values.shape[0] >= from_columns and uses_scaled_auction(work)


def _after_row_reduction(problem, work, timeout, auction_rounds: int, began: float, events: tuple) -> EngineResult:
    """A square up to ONE_BLOCK_UP_TO columns in two launches on one stream, nothing copied
    between: the augmenting row reduction (kernels/hungarian.cu, start_only), then the one-block
    searches from its warm start."""
    import time

    import cupy

    stream = current_stream()
    start, copied_in = events
    copied_out = Event()
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
        "start": "augmenting row reduction" if auction is not None else "column reduction",
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
    steps = [StepStat(1, SAP_STEP_NAMES[1], rounds, auction_ms), StepStat(2, SAP_STEP_NAMES[2], searches, search_ms)]
    return certified_result(problem, work, result.col_of_row[0], result.u[0], result.v[0], engine="cuda-sap",
                            device=device_name(), steps=steps, details=details, host_copies=(col_of_row, u, v))


def _after_scaled_auction(problem, work, timeout, auction_rounds: int, began: float, events: tuple) -> EngineResult:
    """A square from the ε-scaling auction on the work matrix (:func:`scaled_auction`), then the
    searches from its duals for the rows it leaves free: in one block up to ONE_BLOCK_UP_TO
    columns (kernels/batch_lap.cu), over a cluster above (kernels/sap.cu). ``auction_rounds`` 0,
    or a matrix the auction does not take: the searches from the column reduction (the twin's
    start: the GPU tests compare the two)."""
    import time

    stream = current_stream()
    start, copied_in = events
    auctioned, copied_out = Event(), Event()
    found = scaled_auction(work, timeout) if auction_rounds and uses_scaled_auction(work) else None
    auctioned.record(stream)
    details = {"start": "column reduction"}
    searched = work.values  # the matrix the searches read
    start_state = None
    if found is None:
        v_start, col_start = column_reduction_start(work.values)
        compile_ms = 0.0
    else:
        compile_ms = found.compile_ms
        details.update(found.details())
        if found.complete and not work.exact:  # its duals are the certificate's: no search
            return _auction_answer(problem, work, found, details, (start, copied_in, auctioned, copied_out))
        start_state = found.hand_over(work.values)
    try:  # from here the work matrix may hold lowered pairs: restored below, whatever happens
        if start_state is not None:
            v_start, col_start, searched = start_state.v, start_state.col_of_row, start_state.values
            details["free_after_auction"] = int(np.count_nonzero(col_start.get() < 0))  # (host: arrays.all_true)
            details["launches"] += 2  # the hand-over's passes
            if start_state.lowered is not None:
                details["lowered_pairs"] = start_state.lowered_pairs
        if timeout:
            timeout = max(timeout - (time.perf_counter() - began), 1e-3)
        search = _search(searched, work.eps, exact=work.exact, start=(v_start, col_start), timeout=timeout)
        if search.steps is not None:
            details["search_steps"] = search.steps
        cols, u, v = search.cols, search.u, search.v
        host = (cols.get(), u.get(), v.get())
    finally:
        if start_state is not None:  # the true costs back, for the certificate
            start_state.restore()
    searched = start_state = None  # a float32 matrix's float64 copy, freed before the certificate
    copied_out.record(stream)
    copied_out.synchronize()
    search.check_status()
    check_result(0, host[0])
    search_events = search.events
    search_ms = search_events[1].ms_since(search_events[0])
    auction_ms = auctioned.ms_since(copied_in) if found is not None else 0.0
    details.update({
        "compile_ms": round(compile_ms + search.compile_ms, 3),
        "h2d_ms": round(copied_in.ms_since(start), 3),
        "kernel_ms": round(auction_ms + search_ms, 3),
        "d2h_ms": round(copied_out.ms_since(search_events[1]), 3),
        "search_layout": search.layout,
        "launches": details.get("launches", 0) + 1,
    })
    steps = [StepStat(1, SAP_STEP_NAMES[1], len(found.result.phases) if found is not None else 0, auction_ms),
             StepStat(2, SAP_STEP_NAMES[2], search.searches, search_ms)]
    return certified_result(problem, work, cols, u, v, engine="cuda-sap", device=device_name(),
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
    steps = [StepStat(1, SAP_STEP_NAMES[1], len(found.result.phases), auction_ms),
             StepStat(2, SAP_STEP_NAMES[2], 0, 0.0)]
    return certified_result(problem, work, cols, u, v, engine="cuda-sap", device=device_name(), steps=steps,
                            details=details, host_copies=host)


@dataclass
class _Searches:
    """What the searches queued (:func:`_search`): the answer on the device, the launch's events,
    and how to read its outcome."""

    cols: Any
    u: Any
    v: Any
    events: tuple
    layout: str
    compile_ms: float
    searches: int  # rows searched from (free rows of the start)
    steps: int | None  # cluster searches' steps (the one-block kernel does not count them)
    status: Any  # the one-block kernel's status word on the device (None for a cluster)

    def check_status(self) -> None:
        """Raise SolverError when the one-block kernel ended with a status other than 0 (after the
        launch: a copy back, which waits for it; a cluster's status is read by its stats)."""
        if self.status is not None and (word := int(self.status.get()[0])) != 0:
            raise SolverError(STATUS_MESSAGES.get(word, f"the search kernel ended with status {word}"))


def _search(values, eps: float, *, exact: bool, start=None, timeout: float | None) -> _Searches:
    """Queue the searches of a k × m work matrix (k ≤ m) in one block up to ONE_BLOCK_UP_TO columns
    (kernels/batch_lap.cu), over a cluster above (kernels/sap.cu): from ``start`` = (v, col_of_row)
    with -1 on the free rows (a square's auction or column reduction), else every row from v = 0."""
    import cupy

    rows, columns = values.shape
    if columns > ONE_BLOCK_UP_TO:
        result = sap_cluster.solve(values, *(start or ()), timeout=timeout)
        cols, v = result.col_of_row, result.v
        u = values[cupy.arange(rows), cols].astype(v.dtype) - v[cols]
        stats = result.checked_stats()
        return _Searches(cols, u, v, result.events, f"cluster of {sap_cluster.CLUSTER} x {sap_cluster.THREADS}",
                         result.compile_ms, stats["searches"], stats["steps"], None)
    warm_start = None
    if start is not None:
        dual = np.int64 if exact else np.float64
        warm_start = (start[0].astype(dual).reshape(1, columns), start[1].reshape(1, rows))
    result = solve_stack(values[None], eps, timeout=timeout, synchronize=False, warm_start=warm_start)
    searches = rows if start is None else int(np.count_nonzero(start[1].get() < 0))  # (arrays.all_true: no CUB)
    return _Searches(result.col_of_row[0], result.u[0], result.v[0], result.details["events"],
                     result.details["layout"], result.details["compile_ms"], searches, None, result.status)


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
        check_clusters(problem.size, f"above {ONE_BLOCK_UP_TO} columns")
    start.record(stream)
    source = problem.original if problem.xp is cupy else upload(problem.original)
    problem.check_entries_on(source, cupy)
    work = problem.work_stack(cupy, source=source)  # (1, k, m), k < m
    values = cupy.ascontiguousarray(work.values[0])
    k, m = values.shape
    offsets = [None if o is None else cupy.asnumpy(o[0]) for o in (work.row_offset, work.col_offset)]
    matrix = WorkMatrix(values, work.eps(0), offsets[0], offsets[1], list(work.notes))
    copied_in.record(stream)
    found = _search(values, matrix.eps, exact=matrix.exact, timeout=timeout)
    host = (found.cols.get(), found.u.get(), found.v.get())
    copied_out.record(stream)
    copied_out.synchronize()
    found.check_status()
    check_result(0, host[0])
    search_ms = found.events[1].ms_since(found.events[0])
    details = {"compile_ms": round(found.compile_ms, 3), "h2d_ms": round(copied_in.ms_since(start), 3),
               "kernel_ms": round(search_ms, 3), "d2h_ms": round(copied_out.ms_since(found.events[1]), 3),
               "launches": 1, "auction_rounds": 0, "search_layout": found.layout, "rectangular": f"{k}x{m}"}
    if found.steps is not None:
        details["search_steps"] = found.steps
    steps = [StepStat(1, SAP_STEP_NAMES[1], 0, 0.0), StepStat(2, SAP_STEP_NAMES[2], found.searches, search_ms)]
    return certified_result(problem, matrix, found.cols, found.u, found.v, engine="cuda-sap", device=device_name(),
                            steps=steps, details=details, host_copies=host)
