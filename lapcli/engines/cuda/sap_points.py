"""Engine ``cuda-sap`` on two point sets (lapcli.points.PointProblem): their costs computed from
the coordinates wherever a kernel reads one (lapcli.cuda.points), never stored as a matrix. A
square of AUCTION_FROM points or more, minimised, goes to the ε-scaling auction
(lapcli.cuda.auction), the others to the searches over a thread-block cluster (kernels/sap.cu).
``run_points`` is the engine's entry for them (lapcli.engines.cuda.sap re-exports it)."""

from __future__ import annotations

import time

from ... import points_frame
from ...cuda import auction, auction_tiles, sap_cluster, sap_rounds
from ...cuda.hungarian import check_result, device_name
from ...cuda.runtime import Event, current_gpu, current_stream
from ...errors import SolverError
from ...problem import array_module
from ...steps import SAP_STEP_NAMES, StepStat
from ..base import EngineResult
from . import sap_warm
from .sap_room import check_clusters
from .sap_start import AUCTION_EPS_OF_TOLERANCE, auction_budget, kept_pairs, rows_take_lowest_column


def run_points(problem, *, timeout: float | None = None, device: int | None = None,
               progress=None, solve_matrix=None) -> EngineResult:
    """Two point sets (lapcli.points.PointProblem), their costs computed from the coordinates
    wherever a kernel reads one (lapcli.cuda.points): no k × m matrix exists, device memory is
    O((k + m)·d) plus O(m) of state. A square problem of AUCTION_FROM points or more, minimised,
    is solved by the ε-scaling auction (lapcli.cuda.auction) down to an ε below the certificate's
    tolerance, or for points_budget(n) seconds, the searches taking what it leaves (sqeuclidean
    sets first moved into one frame: lapcli.points_frame); the others by the shortest augmenting
    paths over one thread-block cluster. One more streamed pass over all k·m true costs is the
    certificate. ``progress(phase, phases_left)`` follows the auction round by round
    (lapcli.cuda.auction.solve). ``solve_matrix(problem, timeout=)``, engine cuda-sap's square
    solve, solves the sample of the auction's warm start (sap_warm; None: no warm start)."""
    import cupy

    from ...certificate import check_rounding, judged
    from ...cuda import points as device_points

    with cupy.cuda.Device(device if device is not None else cupy.cuda.runtime.getDevice()):
        k, m = sorted((problem.n_rows, problem.n_cols))
        by_auction = auction.solves(k, m, problem.maximize)
        # the searches need a cluster's room; the auction (its 128-bit swaps) Hopper only
        check_clusters(0 if by_auction else m, "on point sets")
        stream = current_stream()
        current_gpu()
        # the auction's square sqeuclidean sets in one frame (lapcli.points_frame: the same answers)
        frame = points_frame.onto_rows(problem) if by_auction else None
        start, copied_in, solved, certified = (Event() for _ in range(4))
        start.record(stream)
        points = device_points.upload(frame.moved if frame else problem, "auction" if by_auction else "search")
        copied_in.record(stream)
        # the auction's columns in tiles of nearby points (lapcli.cuda.auction_tiles); the answer maps back
        tiled = by_auction and auction_tiles.tiled(problem.metric, problem.dim)
        tiles = auction_tiles.put_in_tiles(points) if tiled else None
        row_order = auction_tiles.put_rows_in_order(points) if tiled else None
        details = {
            "costs": f"{problem.metric_text} from {problem.dim}-D coordinates (computed where read, no matrix)",
            "compile_ms": round(points.compile_ms, 3),
        }
        if tiles is not None:
            details["tiles"] = f"{tiles.count} of {auction_tiles.TILE} columns in Morton order, the rows in theirs"
        if frame is not None:
            details["frame"] = frame.describe()
        if by_auction:
            tolerance = frame.tolerance() if frame else problem.tolerance()
            cols, v, steps, launches = _points_auction(points, tiles, tolerance, details, timeout, progress,
                                                       solve_matrix)
        else:
            cols, v, steps, launches = _points_searches(points, details, timeout)
        solved.record(stream)
        checking = time.perf_counter()
        host_cols = cols.get()
        check_result(0, host_cols)  # a permutation, before any pass reads a pair through it
        if frame is not None:  # the certificate reads the true costs
            v = true_points(frame, points, v, tiles, row_order)
        pair = device_points.pair_costs(points, cols)
        u = pair - v[cols]
        minima, _ = device_points.row_min(points, v)
        host = (host_cols, u.get(), v.get())
        if tiles is not None:  # back to the problem's columns
            host = tiles.in_problem_order(*host, row_order)
        certificate = judged((minima - u).min(), cupy.abs(pair - u - v[cols]).max(), v, cols, m,
                             problem.tolerance(), "cuda-sap", checking, "device",
                             check_rounding(u, v, problem.tolerance()))
        certified.record(stream)
        certified.synchronize()
        details.update({"h2d_ms": round(copied_in.ms_since(start), 3),
                        "kernel_ms": round(solved.ms_since(copied_in), 3),
                        # the certificate's three, the tiles' three and the rows' order's two
                        "launches": launches + 3 + 5 * (tiles is not None)})
        if k < m:
            details["rectangular"] = f"{k}x{m}"
        rows, cols_caller = problem.assignment_from_work(host[0])
        return EngineResult(rows=rows, cols=cols_caller, device=device_name(), dtype="float64", steps=steps,
                            details=details, duals=problem.duals_from_work(host[1], host[2]),
                            certificate=certificate.to_dict())


# The point auction's eviction chains end after points_chain_limit(n) bids, the row left to bid
# again in the next round (lapcli.cuda.auction.solve's max_chain): one warp follows a chain alone,
# each bid (~2 µs) waiting on the last, so a round lasts as long as its longest chain, and a
# limit trades that for more rounds, each with a release pass. H100, 65,536 uniform points, a
# limit of 4096: euclidean 6.7–9.2 s against past 15 s without (a chain of 405,000 bids),
# sqeuclidean 2.6–2.8 s against 3.2; 256 and 32 were slower. Above, the limit grows as n/16: the
# release pass reads only a row's near tiles (auction_tiles), and longer chains cost more than the
# rounds they save. H200, one call, one solve a set (docs/points.md): 262,144 points at 16,384
# uniform 3.3 s against 6.5 at n²/2²⁰ = 65,536 (the rule before), clustered (seeds 2, 4) 8.9 and
# 8.1 s against 9.8 and 8.4; 1,048,576 uniform points at 65,536 21.3 s against 23.5 at 16,384 and
# 42.5 at 2²⁰, clustered (seed 4) 88.4 s against 128.0 at 2²⁰ (another run).
MIN_CHAIN, CHAIN_OF_N = 4096, 16


def points_chain_limit(n: int) -> int:
    """The bids a point auction's eviction chain may make on n points before its row waits for
    the next round: n / CHAIN_OF_N, at least MIN_CHAIN."""
    return max(MIN_CHAIN, n // CHAIN_OF_N)


# A square's auction ends a phase where a round's chain limit leaves at most TAIL_ROWS rows free,
# and no fewer than the round before (a phase's last rows wage price wars that one warp bids out
# alone, in ε steps): they bid again in the next phase, and after the last one the exact searches
# of kernels/sap_rounds.cu take them, as on a dense square (lapcli.engines.cuda.sap_start),
# wherever the blocks' shared memory holds the columns' search state (lapcli.cuda.sap_rounds.
# max_columns: ~1.7 M columns on an H100). Larger squares bid to the end. H100, 65,536 points, one
# call (docs/points.md): 256 rows took cityblock 6.2 s against 12.1 with 64, uniform the same;
# clustered points 16.0 s against 42 in another call; ending at the first round under 256 rows
# took 11.4 s on cityblock and 7.3 on euclidean.
# A round that parks more than TAIL_ROWS rows, and more than the round before, is a price war
# (lapcli.cuda.auction.tail_wages_war): on clustered points a region's surplus of rows bids its
# columns' prices down in ε steps, 78–203 rounds and 0.11–0.90 G bids at 32,768 points (6.4–24.7 s,
# H100). Its rows are deferred to the searches, which move them along shortest paths.
# Up to COARSE_FIRST_UP_TO points the auction's first phase is coarse (lapcli.cuda.auction.
# COARSE_FIRST), ended by its tail rule at COARSE_TAIL_ROWS rows. H200, one solve a set, 65,536
# clustered points, seeds 0-4: 1.39, 1.35, 12.7, 18.7, 9.8 s against 6.6-6.9, 5.4-6.3, 18.8, 21.9,
# 18.2 s plain (32,768, seed 2: 4.4 against 11.2; uniform and cityblock as plain; docs/points.md).
# Bid to the end, the coarse phase ran past 40-60 s on seeds 2-6.
# Above it the coarse phase runs where the warm start does (sap_warm.warms, to 1,048,576 points):
# H200, three calls: clustered 131,072 points (seeds 0, 2, 3, 4) 3.8-6.0 s and 262,144 (seeds 2,
# 3, 4) 13.3-18.9 s (coarse factor 16; 11.7-16.6 at 64, below), where the plain first phase ran
# past 45 s (seeds 2, 3) and the coarse one without the warm start 10.0 and 8.0 s at 131,072 and
# past 45 s at 262,144; uniform 262,144 4.9-6.2 s against 5.6 plain and 7.3 coarse without it.
# 1,048,576 clustered points (H200, rows in Morton order, points_budget) are solved only so: seeds
# 2 and 4 in 134.5 and 88.4 s, their coarse phases (factor 256) ending after 72 and 52 s, where at
# factor 16 it had not ended after 200 s, and the plain first phase (an earlier code) bid 796 M
# times in one round without ending in 240 s. Uniform ones paid for that factor (84.0 s against
# 39.5 plain in one process, chains of 2^20 bids then) until the sample's reach kept theirs at 16
# (below; 44.5 s with those chains, 21.3 s now).
COARSE_FIRST_UP_TO = 65_536
# Above COARSE_GROWS_FROM points the coarse phase's ε grows in proportion to n on 2-D sqeuclidean
# points (coarse_factor): their median candidate spread falls as 1/n, while a region's surplus must
# move as far. H200, warm start, one process: 262,144 clustered points at 64 (seeds 2, 3, 4)
# 13.5-15.0, 15.9-16.6, 12.0 s against 18.1-19.5, 17.1-17.5, 13.9 at 16; uniform (two sets) 6.2,
# 6.4 against 6.3, 5.9; 131,072 clustered at 32 (two sets) 6.5, 5.3 against 6.4, 5.0. Other
# metrics and dimensions (whose spread falls as n^(-1/d) or n^(-2/d)) were not measured: 16.
# It grows only where the warm start's sample moves points far (sap_warm.WarmStart.moves_far):
# uniform sets have no surplus to carry, and at 1,048,576 points the factor 256 cost them 84.0 s
# against 44.5 at 16 (H200, two runs, chains of 2^20 bids; their sample's reach 9.1, clustered
# sets' 73-113 there).
COARSE_GROWS_FROM = 65_536
# A square whose last rows the searches can take (tail_threads) gives the auction a budget
# (points_budget); past it the auction's duals as they are, and every pair within 2ε of its row's
# minimum (ε the last phase's, whatever phase it stopped in: _searched_tail), start the searches.
# Costs nearly tied over many columns are the auction's worst case: rows bid the same columns'
# prices up ε at a time. H200 (docs/points.md, "Where it is slow"): 16,384 points on 16 distinct
# places 6.7 s against 29.7 without the budget, 1,500 of them 0.6 s against 1.8; no uniform or
# clustered set of 65,536 points reaches it (1.3-2.3 s against 6.6).
# A block has TAIL_THREADS threads, TAIL_WIDE_THREADS for points of more than TAIL_WIDE_DIM
# coordinates: a column's point is held in registers while a round's rows are scanned against it,
# and at 512 threads (128 registers a thread) minkowski's 11 coordinates spill.
TAIL_THREADS, TAIL_WIDE_THREADS = 512, 256
TAIL_WIDE_DIM = 10
TAIL_ROWS = 256
# A round of the searches first takes the pending columns within this many times the last ε of
# the least one (the kernel then halves or doubles it to take about ROUND_ROWS a round).
FIRST_DELTA_OF_EPS = 4.0


# The budget is the dense squares' (sap_start.auction_budget, 10^-4 s a point) up to
# BUDGET_GROWS_FROM points, and grows as n^1.5 above, as the uniform time does (n^1.45-1.6, H200,
# 65,536 to 1,048,576 points): a budget stop in any phase but the last hands the searches nearly
# every row, more than they search in minutes at that size. H200, 1,048,576 clustered points (seed
# 2): the linear budget's 105 s stopped the auction as its fourth phase ended, the hand-over gave
# 917,189 rows to the searches, and they searched 98,793 in the 93 s left of a 200 s limit; with
# this budget's 419 s it ended its seven phases in 172 s and the searches took 1,302 rows (88 s).
BUDGET_GROWS_FROM = 65_536


def points_budget(n: int) -> float:
    """The seconds the point auction on n points bids before the searches take what it leaves:
    sap_start.auction_budget(n) up to BUDGET_GROWS_FROM points, then growing as n^1.5."""
    return auction_budget(n) * max(1.0, n / BUDGET_GROWS_FROM) ** 0.5


def load_programs(metric: str, dim: int) -> float:
    """Compile, or read from the kernel cache, what a square point problem of ``metric`` and ``dim``
    coordinates above AUCTION_FROM runs on the current device (the auction, the searches that
    take its last rows, and its warm start's sample solve); the milliseconds it took. A caller
    that times solves loads them first, so that no timed solve holds a compilation (1–1.5 s at
    65,536 points on an H200; the sample's programs 10–15 s more)."""
    from ...cuda import points as device_points
    from ...cuda.runtime import load

    return (load(device_points.program(metric, dim, "auction"))[1]
            + load(device_points.program(metric, dim, "tail", threads=tail_block_threads(dim)))[1]
            + (sap_warm.load_programs() if auction_tiles.tiled(metric, dim) else 0.0))


def tail_block_threads(dim: int) -> int:
    """The threads a block of the searches that finish an auction has for points of ``dim``
    coordinates (TAIL_WIDE_THREADS past TAIL_WIDE_DIM)."""
    return TAIL_THREADS if dim <= TAIL_WIDE_DIM else TAIL_WIDE_THREADS


def tail_threads(m: int, dim: int) -> int | None:
    """tail_block_threads(dim) where the current device's blocks hold the search state of m
    columns of ``dim`` coordinates, else None."""
    threads = tail_block_threads(dim)
    gpu = current_gpu()
    return threads if m <= sap_rounds.max_columns(gpu.max_shared, gpu.sms, threads, record=dim + 2) else None


def coarse_factor(points, start: sap_warm.WarmStart | None) -> float:
    """The coarse first phase's ε over the plain first ε for the square point auction on
    ``points`` (0: no coarse phase): auction.COARSE_FIRST up to COARSE_FIRST_UP_TO points, and
    above only from a warm ``start`` (where both were measured); in proportion to n above
    COARSE_GROWS_FROM points on 2-D sqeuclidean points whose start's sample moves points far
    (sap_warm.WarmStart.moves_far: a region's surplus to carry; uniform sets have none)."""
    if start is None and points.k > COARSE_FIRST_UP_TO:
        return 0.0
    grows = (start is not None and start.moves_far and points.metric == "sqeuclidean"
             and points.rows.shape[1] == 2)
    return auction.COARSE_FIRST * (max(1.0, points.k / COARSE_GROWS_FROM) if grows else 1.0)


def true_points(frame, points, v, tiles=None, row_order=None):
    """Put the original sets back into ``points`` (lapcli.cuda.points.DevicePoints, solved in
    ``frame``, lapcli.points_frame.Frame), in the work's orders (the columns' ``tiles.order``, the
    rows' ``row_order``; None: as given), for the certificate's passes; returns the original
    problem's column duals from the moved one's ``v`` (work order). NumPy or CuPy, as ``points``
    (host coordinates are copied to the device a second time here: O(n·d), in the certificate's
    time)."""
    xp = array_module(points.columns)
    moved_columns = points.columns
    rows = xp.asarray(frame.original.rows, dtype=xp.float64)
    columns = xp.asarray(frame.original.columns, dtype=xp.float64)
    if row_order is not None:
        rows = rows[row_order]
    if tiles is not None:
        columns = columns[tiles.order]
    points.rows, points.rows_t = xp.ascontiguousarray(rows), xp.ascontiguousarray(rows.T)
    points.columns, points.columns_t = xp.ascontiguousarray(columns), xp.ascontiguousarray(columns.T)
    return frame.column_duals(v, points.columns, moved_columns)


def _points_auction(points, tiles, tolerance: float, details: dict, timeout, progress, solve_matrix):
    """The square point problem by the ε-scaling auction (its start: sap_warm; its first phase:
    coarse_factor) down to an ε below ``tolerance`` (the certificate's zero), its last phase's tail
    by the searches in rounds (where the blocks hold the columns): (col_of_row, v, steps, launches)."""
    began = time.perf_counter()
    final_eps = tolerance * AUCTION_EPS_OF_TOLERANCE
    threads = tail_threads(points.m, points.rows.shape[1])
    budget = points_budget(points.k) if threads is not None else None
    steps, start, left = [], None, timeout
    if solve_matrix is not None and sap_warm.warms(points):  # (tiled columns)
        start = sap_warm.column_duals(points, solve_matrix, timeout)
        warm_ms = 1e3 * (time.perf_counter() - began)
        # (a reach of inf: the sample's median least cost is 0, duplicated points; it counts as far)
        details.update(warm_start=f"the duals of {start.sampled:,} sampled points", warm_start_ms=round(warm_ms, 3),
                       warm_start_reach=round(start.reach, 1))
        steps.append(StepStat(1, f"warm start: {details['warm_start']}", start.sampled, warm_ms))
        left = None if not timeout else max(timeout - warm_ms / 1e3, 1e-3)
    coarse_first = coarse_factor(points, start)
    if coarse_first:
        details["coarse_factor"] = round(coarse_first, 3)
    found = auction.solve(points.kernels, points.source(), points.k, final_eps, timeout=left, budget=budget,
                          progress=progress, max_chain=points_chain_limit(points.k),
                          tail_rows=TAIL_ROWS if threads else 0, last_tail_to_searches=threads is not None,
                          stalled_tail=True, defer_wars=True, block_rows_up_to=auction.BLOCK_ROWS_UP_TO,
                          coarse_first=coarse_first, tiles=tiles, v_start=None if start is None else start.v)
    details.update(found.details())
    if budget is not None:
        details["auction_budget_s"] = round(budget, 3)
    # a step per phase: its bids and its time (the release pass included)
    steps += [StepStat(len(steps) + index + 1, f"auction, eps {phase.eps:.3g}", phase.bids, phase.ms)
              for index, phase in enumerate(found.phases)]
    if found.complete:
        return found.col_of_row, found.v, steps, found.launches
    if threads is None:  # no budget and no tail: an unfinished auction here is a bug
        raise SolverError(f"the point auction stopped at eps {found.eps:.3g} with no searches to finish it")
    left = None if not timeout else timeout - (time.perf_counter() - began)
    if left is not None and left <= 0:
        raise SolverError("the auction ran past its time limit before its last rows were searched")
    cols, v, searched = _searched_tail(points, found, threads, final_eps, left, details)
    # launches: the hand-over's two passes and the searches
    return cols, v, [*steps, StepStat(len(steps) + 1, SAP_STEP_NAMES[2], *searched)], found.launches + 3


def _searched_tail(points, found, threads: int, final_eps: float, timeout, details: dict):
    """The searches from where the auction stopped (lapcli.twins.hand_over's rule, on implicit
    costs): a row is kept where its pair is within 2ε of its row's minimum of c − v over all
    columns, ε = ``final_eps``, the last phase's (a budget may stop the auction in an earlier,
    coarser phase: its ε is never below it), that pair lowered to the minimum (LoweredPoints) so
    that the searches start from tight rows and are exact on the lowered costs; their duals are
    then feasible for the true costs, and a kept pair ends at most 2·final_eps from tight (the
    certificate allows 8·final_eps; in the rows' frame, lapcli.points_frame, these costs and ε are
    the frame's, and r·8·final_eps is at most the true costs' tolerance). The other rows are
    searched from.
    (col_of_row, v, (searches, ms))."""
    import cupy

    from ...cuda import points as device_points

    stream = current_stream()
    begin = Event()
    begin.record(stream)
    v, col = found.v, found.col_of_row
    minima, held, gap, kept = kept_pairs(points.kernels, points.source(), points.k, v, col, 2 * final_eps)
    dim = points.rows.shape[1]
    records = cupy.empty((points.k, dim + 2), dtype=cupy.float64)
    records[:, :dim] = points.rows
    records[:, dim] = cupy.where(kept & cupy.greater(gap, 0), held, -1)
    records[:, dim + 1] = minima + v[held]
    result = device_points.search_lowered(points, records, v, cupy.where(kept, col, -1).astype(cupy.int32), threads,
                                          FIRST_DELTA_OF_EPS * found.eps, timeout=timeout)
    stats = result.checked_stats(  # waits for the searches
        timed_out=lambda stats: searches_timed_out(stats["searches"], points.k - int(kept.sum()), found))
    details.update({"search_layout": f"{current_gpu().sms} blocks x {threads}", "search_rounds": stats["rounds"],
                    "rows_scanned": stats["rows"], "tail_searches": stats["searches"],
                    "compile_ms": round(details.get("compile_ms", 0.0) + result.compile_ms, 3)})
    return result.col_of_row, result.v, (stats["searches"], result.events[1].ms_since(begin))


def searches_timed_out(searched: int, handed: int, found) -> str:
    """The time limit's error where the searches after the point auction ``found``
    (lapcli.cuda.auction.AuctionResult) ran past it: how many of the ``handed`` rows the hand-over
    gave them (free, or holding a pair it did not keep) were searched, and where the auction had
    stopped."""
    stopped = "its time budget stopped it" if found.budget_spent else "after its last phase"
    return (f"the exact searches ran past the time limit: {searched:,} of the {handed:,} rows handed to them "
            f"were searched (the auction at eps {found.eps:.3g}, {stopped})")


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
             StepStat(2, SAP_STEP_NAMES[2], stats["searches"], search_end.ms_since(search_begin))]
    return result.col_of_row, result.v, steps, 1 + (col_start is not None)
