"""Point sets on the GPU (engine cuda-sap's run_points, lapcli.cuda.points and .auction): the
streamed passes equal the NumPy reference bit for bit, the implicit-cost searches equal the same
kernel on the dense matrix, the auction's answers keep its bound, and every answer is optimal and
certified (pytest -m gpu)."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.errors import SolverError
from lapcli.points import distance_matrix, prepare_points
from lapcli.twins import check_duals, column_reduction

pytestmark = pytest.mark.gpu

METRICS = [("sqeuclidean", None), ("euclidean", None), ("cityblock", None), ("chebyshev", None),
           ("cosine", None), ("minkowski", 3.0), ("minkowski", 0.5)]


def device_points(problem):
    from lapcli.cuda import points

    return points.upload(problem)


@pytest.mark.parametrize("metric, p", METRICS)
@pytest.mark.parametrize("dim", [1, 2, 3, 16])
def test_the_streamed_passes_equal_the_numpy_reference(rng, metric, p, dim):
    """row_min (with v, and sides swapped) and pair_costs compute the costs lapcli.points.costs
    does, bit for bit (minkowski's pow within an ulp); ties go to the lowest column (integer
    coordinates make many)."""
    import cupy

    from lapcli.cuda import points

    a = rng.integers(-3, 4, size=(70, dim)).astype(np.float64)
    b = rng.integers(-3, 4, size=(90, dim)).astype(np.float64)
    if metric == "cosine":
        a[np.all(a == 0, axis=1)] = 1.0
        b[np.all(b == 0, axis=1)] = 1.0
    problem = prepare_points(a, b, metric, p=p)
    dense = distance_matrix(problem.rows, problem.columns, problem.metric, problem.p)
    on_device = device_points(problem)
    v = rng.integers(-2, 3, size=90).astype(np.float64)
    minima, argmin = points.row_min(on_device, cupy.asarray(v))
    reduced = dense - v[None, :]
    col_min, col_arg = points.row_min(on_device, swapped=True)
    cols = rng.permutation(90)[:70].astype(np.int32)
    pairs = points.pair_costs(on_device, cupy.asarray(cols)).get()
    if metric == "minkowski":  # below p = 1 the outer pow scales pow's error by 1/p
        rtol = 1e-15 if p >= 1 else 5e-15 / p  # an ulp of a cost survives c − v near 0: atol at the costs' scale
        np.testing.assert_allclose(minima.get(), reduced.min(axis=1), rtol=rtol, atol=rtol * np.abs(dense).max())
        np.testing.assert_allclose(pairs, dense[np.arange(70), cols], rtol=rtol)
        return
    assert np.array_equal(minima.get(), reduced.min(axis=1)) and np.array_equal(argmin.get(), reduced.argmin(axis=1))
    assert np.array_equal(col_min.get(), dense.min(axis=0)) and np.array_equal(col_arg.get(), dense.argmin(axis=0))
    assert np.array_equal(pairs, dense[np.arange(70), cols])


@pytest.mark.parametrize("shape", [(7, 7), (300, 300), (2500, 2500), (40, 3000)])
def test_implicit_searches_equal_the_dense_kernel(rng, shape):
    """The search kernel on a Points source and on the dense matrix of the same costs, from the
    same start (the column reduction of a square, v = 0 for a rectangle): the same assignment and
    the same duals, exactly."""
    import cupy

    from lapcli.cuda import points, sap_cluster

    n, m = shape
    a, b = rng.random((n, 2)), rng.random((m, 2))
    problem = prepare_points(a, b)
    dense = distance_matrix(a, b, "sqeuclidean")
    if n == m:
        v0, col0 = column_reduction(dense)
        starts = (cupy.asarray(v0), cupy.asarray(col0.astype(np.int32)))
    else:
        starts = (None, None)
    implicit = points.search(points.upload(problem), *starts)
    kernel = sap_cluster.solve(cupy.asarray(dense), *starts)
    implicit.checked_stats()
    assert np.array_equal(implicit.col_of_row.get(), kernel.col_of_row.get())
    assert np.array_equal(implicit.v.get(), kernel.v.get())


@pytest.mark.parametrize("n", [1024, 1500, 6000])
def test_the_auction_solves_squares_within_its_bound(rng, n, monkeypatch):
    """A minimised square point problem goes to the ε-scaling auction (lapcli.cuda.auction): its
    answer is scipy's objective, and its duals keep every reduced cost ≥ −2ε, a quarter of the
    tolerance. Its budget is lifted, as the phases' count is read here: a budget spent ends the
    phases early (the searches take the rest), as with 1,024 points on a shared GPU, test processes
    side by side on a fresh machine (eleven phases of twelve reported)."""
    from lapcli.engines.cuda import sap_points

    monkeypatch.setattr(sap_points, "points_budget", lambda n: 600.0)
    a, b = rng.random((n, 2)), rng.random((n, 2))
    calls = []
    solution = lapcli.solve_points(a, b, solver="cuda-sap", progress=lambda phase, left: calls.append((phase, left)))
    phases = [(phase, left) for phase, left in calls if phase.ended]
    cost = distance_matrix(a, b, "sqeuclidean")
    rows, cols = scipy_lsa(cost)
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12, abs=1e-12)
    certificate = solution.report.certificate
    assert solution.report.certified and certificate["min_slack"] >= -certificate["tolerance"] / 4
    details = solution.report.details
    assert details["start"] == "epsilon-scaling auction" and details["auction_phases"] == len(phases)
    assert details["auction_budget_s"] == 600.0 and not details["auction_budget_spent"]
    assert [left for _, left in phases] == list(range(len(phases) - 1, -1, -1))
    assert sum(phase.bids for phase, _ in phases) == details["auction_bids"] >= n
    # before each phase's end, a snapshot after each of its rounds: its ε, rounds 1, 2, …, its bids so far
    rounds = []
    for phase, left in calls:
        if not phase.ended:
            rounds.append((phase, left))
            continue
        assert [snapshot.rounds for snapshot, _ in rounds] == list(range(1, phase.rounds + 1))
        assert all(snapshot.eps == phase.eps and snapshot_left == left for snapshot, snapshot_left in rounds)
        assert [snapshot.bids for snapshot, _ in rounds] == sorted(snapshot.bids for snapshot, _ in rounds)
        if rounds:  # the last round's parked rows are what the phase leaves to the next (or the searches)
            assert rounds[-1][0].bids == phase.bids and rounds[-1][0].left_free == phase.left_free
        rounds = []


@pytest.mark.parametrize("dim, metric", [(1, "sqeuclidean"), (3, "cityblock"), (4, "euclidean"),
                                         (5, "sqeuclidean"), (2, "cosine"), (3, "chebyshev")])
def test_the_auction_with_or_without_tiles_is_optimal(rng, dim, metric):
    """Tiles (lapcli.cuda.auction_tiles) bound columns for up to MAX_DIM coordinates and every metric
    but cosine; one coordinate puts 52 bits of it in the Morton code, five and more or cosine scan
    every column. Each path's answer is scipy's objective and certified."""
    n = 1500
    a, b = rng.normal(size=(n, dim)), rng.normal(size=(n, dim))
    solution = lapcli.solve_points(a, b, metric, solver="cuda-sap")
    problem = prepare_points(a, b, metric)  # cosine's of unit length
    cost = distance_matrix(problem.rows, problem.columns, metric)
    assert solution.report.details["start"] == "epsilon-scaling auction"
    assert ("tiles" in solution.report.details) == (dim <= 4 and metric != "cosine")
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
def test_the_auction_with_short_chains_parks_rows_and_stays_optimal(rng, monkeypatch, metric):
    """The point auction's chain limit (sap_points.points_chain_limit) leaves a chain's row free
    for the next round; forced down to 4 bids, nearly every chain parks its row, a phase ends
    where a round parks few, the last phase's go to the searches (on lowered pairs), and the
    answer is still scipy's objective, certified."""
    from lapcli.cuda import auction
    from lapcli.engines.cuda import sap_points

    monkeypatch.setattr(sap_points, "points_chain_limit", lambda n: 4)
    n = 1200
    a, b = rng.random((n, 2)), rng.random((n, 2))
    phases = []
    # alone it takes 0.3–6.5 s (H100); beside other GPU test processes every round's launches and
    # copies wait for the device's time slices, and it once ran past a 60 s limit
    solution = lapcli.solve_points(a, b, metric, solver="cuda-sap", timeout=300,
                                   progress=lambda phase, left: phases.append(phase) if phase.ended else None)
    cost = distance_matrix(a, b, metric)
    rows, cols = scipy_lsa(cost)
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12, abs=1e-12)
    first, *later = phases  # the coarse first phase (lapcli.cuda.auction.COARSE_FIRST) chains on
    assert max(phase.longest_chain for phase in later) == 4 and first.longest_chain <= auction.COARSE_CHAIN
    details = solution.report.details  # parked rows bid again in later rounds and phases, the last's are searched
    if not details["auction_complete"]:
        assert details["tail_searches"] >= details["auction_left_free"] >= 1
        assert solution.report.steps[-1].name == "shortest augmenting paths"


def test_a_price_war_s_rows_bid_no_more_and_the_searches_take_them(rng, monkeypatch):
    """The war rule on the GPU (lapcli.cuda.auction.tail_wages_war, ``defer_wars``): two clusters,
    three quarters of the rows in the one that holds a quarter of the columns, chains cut after 4
    bids and a tail of 2 rows, so that the surplus crossing over parks more rows round after round.
    A war's round ends its phase with its rows deferred; the release passes list them no more, so
    every one ends the auction free (with the last phase's tail), the searches take them, and the
    answer is scipy's objective, certified."""
    from lapcli.cuda import auction
    from lapcli.engines.cuda import sap_points

    monkeypatch.setattr(sap_points, "TAIL_ROWS", 2)
    monkeypatch.setattr(sap_points, "points_chain_limit", lambda n: 4)
    found = []
    solve = auction.solve
    monkeypatch.setattr(auction, "solve", lambda *args, **kwargs: found.append(
        solve(*args, **{**kwargs, "coarse_first": 0.0})) or found[-1])  # the war rule alone
    n, crowded = 1200, 900
    a = np.concatenate([rng.normal(0.0, 0.03, (crowded, 2)), rng.normal(1.0, 0.03, (n - crowded, 2))])
    b = np.concatenate([rng.normal(0.0, 0.03, (n - crowded, 2)), rng.normal(1.0, 0.03, (crowded, 2))])
    solution = lapcli.solve_points(a, b, solver="cuda-sap", timeout=300)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    (result,) = found
    deferred = result.details()["auction_deferred"]
    assert deferred > 0 and not result.complete and solution.report.details["auction_deferred"] == deferred
    assert all(phase.left_free == phase.deferred for phase in result.phases if phase.deferred)
    last_tail = 0 if result.phases[-1].deferred else result.phases[-1].left_free
    assert int((result.col_of_row < 0).sum()) == deferred + last_tail
    assert solution.report.details["tail_searches"] >= deferred


def test_a_coarse_first_phase_bids_the_surplus_out_before_the_later_phases(rng, monkeypatch):
    """The point auction's first phase runs at COARSE_FIRST times the usual first ε and bids until
    its tail rule stops it at COARSE_TAIL_ROWS rows or fewer (lapcli.cuda.auction.solve's
    ``coarse_first``), in chains of at most COARSE_CHAIN bids: on two clusters whose surplus must
    cross (the war rule's set, chains of 4 and a tail of 2 after it) it leaves at most those 2 rows
    free and defers none, and the answer is scipy's objective, certified. Above
    sap_points.COARSE_FIRST_UP_TO points the first phase is plain."""
    from lapcli.cuda import auction
    from lapcli.engines.cuda import sap_points

    monkeypatch.setattr(sap_points, "TAIL_ROWS", 2)
    monkeypatch.setattr(sap_points, "points_chain_limit", lambda n: 4)
    n, crowded = 1200, 900
    monkeypatch.setattr(sap_points, "COARSE_FIRST_UP_TO", n)
    found = []
    solve = auction.solve
    monkeypatch.setattr(auction, "solve", lambda *args, **kwargs: found.append(solve(*args, **kwargs)) or found[-1])
    a = np.concatenate([rng.normal(0.0, 0.03, (crowded, 2)), rng.normal(1.0, 0.03, (n - crowded, 2))])
    b = np.concatenate([rng.normal(0.0, 0.03, (n - crowded, 2)), rng.normal(1.0, 0.03, (crowded, 2))])
    cost = distance_matrix(a, b, "sqeuclidean")
    solution = lapcli.solve_points(a, b, solver="cuda-sap", timeout=300)
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    monkeypatch.setattr(auction, "solve", lambda *args, **kwargs: found.append(
        solve(*args, **{**kwargs, "coarse_first": 0.0})) or found[-1])
    assert lapcli.solve_points(a, b, solver="cuda-sap", timeout=300).report.certified
    monkeypatch.setattr(auction, "solve", lambda *args, **kwargs: found.append(solve(*args, **kwargs)) or found[-1])
    monkeypatch.setattr(sap_points, "COARSE_FIRST_UP_TO", n - 1)  # larger sets start plain
    assert lapcli.solve_points(a, b, solver="cuda-sap", timeout=300).report.certified
    coarse, plain, above = found
    first = coarse.phases[0]
    assert first.eps == pytest.approx(plain.phases[0].eps * auction.COARSE_FIRST, rel=1e-12)
    assert first.left_free <= 2 and first.deferred == 0 and 4 < first.longest_chain <= auction.COARSE_CHAIN
    assert all(phase.longest_chain <= 4 for phase in coarse.phases[1:])
    assert above.phases[0].eps == plain.phases[0].eps


@pytest.fixture
def plain_first_phase(monkeypatch):
    """The point auction without its coarse first phase (``coarse_first`` 0): the tests of the
    bids' kernels and floors read every phase's bids on the usual ε schedule."""
    from lapcli.cuda import auction

    solve = auction.solve
    monkeypatch.setattr(auction, "solve", lambda *args, **kwargs: solve(*args, **{**kwargs, "coarse_first": 0.0}))


@pytest.mark.parametrize("block_rows", [0, 10**9])
@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
def test_a_warp_or_a_block_a_row_bids_alike(rng, monkeypatch, plain_first_phase, metric, block_rows):
    """kernels/auction.cu bids a warp a row (auction_bid) or, in a round of few rows, a block a row
    (auction_bid_blocks). Forced to either in every round, with chains short enough to park
    rows, the auction ends on scipy's objective, certified."""
    from lapcli.cuda import auction, runtime
    from lapcli.engines.cuda import sap_points

    monkeypatch.setattr(auction, "BLOCK_ROWS_UP_TO", block_rows)
    monkeypatch.setattr(sap_points, "points_chain_limit", lambda n: 300)
    launched = []
    launch = runtime.Kernel.launch
    monkeypatch.setattr(runtime.Kernel, "launch",
                        lambda self, *args, **kwargs: launched.append(self.name) or launch(self, *args, **kwargs))
    n = 1300
    a, b = rng.random((n, 2)), rng.random((n, 2))
    solution = lapcli.solve_points(a, b, metric, solver="cuda-sap", timeout=300)
    cost = distance_matrix(a, b, metric)
    rows, cols = scipy_lsa(cost)
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12, abs=1e-12)
    bids = {name.split("<")[0] for name in launched if name.startswith("auction_bid")}
    assert bids == ({"auction_bid_blocks"} if block_rows else {"auction_bid"})


@pytest.mark.parametrize("block_rows", [0, 10**9])
def test_a_price_war_bids_often_on_what_the_floor_proves(monkeypatch, plain_first_phase, block_rows):
    """Uniform cityblock points: the last phases' price wars take rows past 256 bids a phase, where
    a bid scans all columns unless the row's floor proves its candidates' best (kernels/auction.cu).
    A warp or a block a row, the floor proves many of them (one that proves nothing makes every
    one a full scan), and the answer is scipy's, certified. The bids run in no fixed order: on an
    H200 most solves made ~60 full scans and 100–1,400 proved bids, and 4 of 20 a last-phase war
    (two read: ~25,000 full scans, 16,000–17,000 proved): more than a third proved, not most."""
    from lapcli.cuda import auction
    from lapcli.generate import generate_points

    monkeypatch.setattr(auction, "BLOCK_ROWS_UP_TO", block_rows)
    n = 4096
    a, b = generate_points(n, 2, seed=19), generate_points(n, 2, seed=20)
    solution = lapcli.solve_points(a, b, "cityblock", solver="cuda-sap", timeout=300)
    cost = distance_matrix(a, b, "cityblock")
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    details = solution.report.details
    assert 2 * details["auction_proved_bids"] > details["auction_full_scans"] > 0


@pytest.mark.parametrize("kernel, threads", [("auction_bid", 256), ("auction_bid_blocks", 512),
                                             ("auction_bid_blocks", 256)])
@pytest.mark.parametrize("n, grid", [(1000, 0), (150, 0), (4000, 40)])
def test_a_full_scan_leaves_the_lanes_candidates_and_floor(rng, kernel, threads, n, grid):
    """A row's full scan, a warp or a block a row (kernels/auction.cu), refills all of the row's
    candidates and leaves the floor of the twin's rule (lapcli.twins.auction._refill_of_a_full_scan):
    slots l, 32 + l, … hold the NEAR + 1 least reduced costs of columns l, l + 32, … and the floor
    is the least of those lanes' next ones. One free row, past DENSE_AFTER bids in the phase with no
    floor yet, bids once for a free column; at 1,000 points its near columns' duals are set so that
    none of them stays a candidate; at 150 a lane holds fewer columns than slots (empty ones, -1)
    and no column is left for a floor (inf); at 4,000 points on a 40 x 40 grid (costs tied) each
    thread of a block scans more columns than slots, so the block's merge takes the threads' own
    floors and breaks ties by column."""
    import cupy

    from lapcli.cuda import auction, points
    from lapcli.cuda.auction_tiles import NO_TILES
    from lapcli.twins.auction import _refill_of_a_full_scan

    row = 17
    a, b = ((rng.integers(0, grid, (n, 2)) / grid, rng.integers(0, grid, (n, 2)) / grid) if grid
            else (rng.random((n, 2)), rng.random((n, 2))))
    device = points.upload(prepare_points(a, b), "auction")
    source = device.source()
    columns = cupy.zeros((n, 2), dtype=np.float64)  # (v, owner): AuctionColumn
    columns.view(np.int64)[:, 1] = -1
    candidates = cupy.empty((n, auction.CANDIDATES), dtype=np.int32)
    device.kernels["auction_candidates"].launch(-(-n // 8), auction.THREADS,
                                                (*source, n, candidates.data.ptr, cupy.empty(n).data.ptr))
    near = candidates[row, :32 * auction.NEAR].get()
    if n > auction.CANDIDATES:
        columns[near, 0] = -10.0  # reduced costs c + 10 > every other column's: the refill keeps none
    v = columns[:, 0].get()  # as the scan reads them (the bid then lowers its column's)
    row_bids = cupy.zeros(n, dtype=np.int32)
    row_bids[row] = auction.DENSE_AFTER  # this bid is past it: the floor rules, and there is none
    floors = cupy.full(n, -np.inf)
    free_rows, words = cupy.full(1, row, dtype=np.int32), cupy.zeros(1, dtype=np.int32)
    counters, status = cupy.zeros(6, dtype=np.uint64), cupy.zeros(1, dtype=np.int32)
    device.kernels[kernel].launch(1, threads, (*source, n, columns.data.ptr, candidates.data.ptr, row_bids.data.ptr,
                                               free_rows.data.ptr, 1, words.data.ptr, 1e-9, 0, 0, counters.data.ptr,
                                               status.data.ptr, cupy.zeros(n, dtype=np.uint8).data.ptr,
                                               floors.data.ptr, *NO_TILES))
    assert counters.get()[:5].tolist() == [1, 0, 1, 0, 1]  # one bid, a full scan
    refill, floor = _refill_of_a_full_scan(distance_matrix(a, b, "sqeuclidean")[row] - v, auction.NEAR + 1)
    assert candidates[row].get().tolist() == refill.tolist()
    assert float(floors[row]) == floor
    if n > auction.CANDIDATES:
        assert not set(refill.tolist()) & set(near.tolist()) and min(refill) >= 0 and np.isfinite(floor)
    else:
        assert sorted(refill[refill >= 0].tolist()) == list(range(n)) and floor == np.inf


@pytest.mark.parametrize("kernel, threads", [("auction_bid", 256), ("auction_bid_blocks", 512),
                                             ("auction_bid_blocks", 256)])
@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
def test_a_tiled_full_scan_reads_the_tiles_below_its_threshold(rng, kernel, threads, metric):
    """With the columns in tiles (lapcli.cuda.auction_tiles), a full scan reads only the tiles whose
    bound (the metric from the row's point to the tile's box, less the tile's largest dual) is at
    or below its threshold, the candidates' largest reduced cost: one free row, past DENSE_AFTER
    bids with no floor, whose one candidate is its best column, bids for that column, refills its
    slots with the lanes' least among the read tiles' columns (the twin's rule on those columns) and
    leaves as floor the least of the lanes' next ones and the skipped tiles' bounds. The tiles'
    order and boxes are their twin's (lapcli.twins.tiles)."""
    import cupy

    from lapcli.cuda import auction, auction_tiles, points
    from lapcli.twins import tiles as twin
    from lapcli.twins.auction import _refill_of_a_full_scan

    n, row = 4096, 17
    a, b = rng.random((n, 2)), rng.random((n, 2))
    device = points.upload(prepare_points(a, b, metric), "auction")
    tiles = auction_tiles.put_in_tiles(device)
    assert tiles.order.get().tolist() == twin.spatial_order(b).tolist()
    b = b[tiles.order.get()]
    assert device.columns.get().tolist() == b.tolist() and device.columns_t.get().tolist() == b.T.tolist()
    boxes = twin.tile_boxes(b)
    assert tiles.boxes.get().tolist() == boxes.tolist()
    columns = cupy.zeros((n, 2), dtype=np.float64)  # (v, owner): AuctionColumn
    columns[:, 0] = cupy.asarray(-0.01 * rng.random(n))  # duals below 0, as bids leave them
    columns.view(np.int64)[:, 1] = -1
    v = columns[:, 0].get()
    reduced = distance_matrix(a, b, metric)[row] - v
    best = int(np.argmin(reduced))
    candidates = cupy.full((n, auction.CANDIDATES), -1, dtype=np.int32)
    candidates[row, 0] = best  # the threshold: its reduced cost
    row_bids = cupy.zeros(n, dtype=np.int32)
    row_bids[row] = auction.DENSE_AFTER
    floors = cupy.full(n, -np.inf)
    free_rows, words = cupy.full(1, row, dtype=np.int32), cupy.zeros(1, dtype=np.int32)
    counters, status = cupy.zeros(6, dtype=np.uint64), cupy.zeros(1, dtype=np.int32)
    tile_arguments = tiles.refreshed(columns, 0)
    device.kernels[kernel].launch(1, threads, (*device.source(), n, columns.data.ptr, candidates.data.ptr,
                                               row_bids.data.ptr, free_rows.data.ptr, 1, words.data.ptr, 1e-9, 0, 0,
                                               counters.data.ptr, status.data.ptr,
                                               cupy.zeros(n, dtype=np.uint8).data.ptr, floors.data.ptr,
                                               *tile_arguments))
    assert counters.get()[:5].tolist() == [1, 0, 1, 0, 1]  # one bid, a full scan
    assert int(columns.view(np.int64)[best, 1]) == row  # the row's best column, as a scan of all would find
    # the tiles' bounds as the kernel computes them (kernels/costs.cuh's box_bound), less their largest dual
    gap = np.maximum(np.maximum(boxes[:, :2] - a[row], a[row] - boxes[:, 2:]), 0.0)
    bounds = (gap[:, 0] * gap[:, 0] + gap[:, 1] * gap[:, 1] if metric == "sqeuclidean"
              else gap[:, 0] + gap[:, 1]) - v.reshape(-1, auction_tiles.TILE).max(axis=1)
    read = bounds <= reduced[best]
    assert 0 < read.sum() < 0.1 * len(read)  # the scan skipped most tiles
    refill, floor = _refill_of_a_full_scan(np.where(np.repeat(read, auction_tiles.TILE), reduced, np.inf),
                                           auction.NEAR + 1)
    assert candidates[row].get().tolist() == refill.tolist()
    assert float(floors[row]) == min(floor, bounds[~read].min())
    assert float(floors[row]) <= np.delete(reduced, refill[refill >= 0]).min()  # a floor under every other column


@pytest.fixture
def floor_from_the_fifth_bid(monkeypatch):
    """kernels/auction.cu compiled with AUCTION_DENSE_AFTER = 4: nearly every row's bids go through
    its floor (proved from the candidates, or a full scan that sets it)."""
    from lapcli.cuda import auction, points

    monkeypatch.setattr(auction, "DENSE_AFTER", 4)
    points.program.cache_clear()
    yield
    points.program.cache_clear()


@pytest.mark.parametrize("block_rows", [0, 10**9])
@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
def test_bids_ruled_by_the_floor_from_the_fifth_stay_optimal(rng, monkeypatch, floor_from_the_fifth_bid, metric,
                                                             block_rows, plain_first_phase):
    """With the floor ruling from a row's fifth bid in a phase, a warp or a block a row, many bids
    are proved from the candidates and many scan all columns, and the answer is scipy's, certified:
    a floor above a column left out of the candidates would make a bid no full scan allows."""
    from lapcli.cuda import auction

    monkeypatch.setattr(auction, "BLOCK_ROWS_UP_TO", block_rows)
    n = 1300
    a, b = rng.random((n, 2)), rng.random((n, 2))
    solution = lapcli.solve_points(a, b, metric, solver="cuda-sap", timeout=300)
    cost = distance_matrix(a, b, metric)
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12, abs=1e-12)
    details = solution.report.details
    assert details["auction_proved_bids"] > 100 and details["auction_full_scans"] > 100


@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
def test_the_searches_finish_an_auction_from_its_last_duals(rng, metric):
    """The hand-over to the searches (sap_points._searched_tail) from a finished auction with 40
    rows made free and 40 pairs moved 2ε above their row's minimum: the rows within 2ε keep their
    pairs, lowered to tight, the others are searched, and the answer is optimal for the true costs
    with every reduced cost ≥ −2ε (a quarter of the certificate's tolerance)."""
    import types

    import cupy

    from lapcli.cuda import auction
    from lapcli.cuda import points as device_points
    from lapcli.engines.cuda import sap_points
    from lapcli.engines.cuda.sap_start import AUCTION_EPS_OF_TOLERANCE

    n = 1500
    a, b = rng.random((n, 2)), rng.random((n, 2))
    problem = prepare_points(a, b, metric)
    points = device_points.upload(problem, "auction")
    final_eps = problem.tolerance() * AUCTION_EPS_OF_TOLERANCE
    found = auction.solve(points.kernels, points.source(), n, final_eps)
    assert found.complete
    col, v = found.col_of_row.copy(), found.v.copy()
    freed, raised = rng.choice(n, 80, replace=False).reshape(2, 40)
    col[cupy.asarray(freed)] = -1
    v[col[cupy.asarray(raised)]] -= 2 * final_eps  # those rows' pairs now lie 2ε further above their minimum
    details = {}
    cols, v_end, (searches, _) = sap_points._searched_tail(
        points, types.SimpleNamespace(col_of_row=col, v=v, eps=final_eps), sap_points.tail_threads(n, 2), final_eps, 60,
        details)
    assert searches == details["tail_searches"] >= 40 and searches < n // 2  # most rows kept
    cost = distance_matrix(a, b, metric)
    host_cols, host_v = cols.get(), v_end.get()
    assert sorted(host_cols.tolist()) == list(range(n))
    assert cost[np.arange(n), host_cols].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12, abs=1e-12)
    u = cost[np.arange(n), host_cols] - host_v[host_cols]
    assert (cost - u[:, None] - host_v[None, :]).min() >= -2 * final_eps - 1e-14


def test_a_maximised_square_goes_to_the_searches(rng):
    """The largest total distance: every row's nearest columns by cost are the same far points, a
    price war for the auction; the cluster searches solve it, certified. (Euclidean: a maximised
    sqeuclidean square is solved as its mirror's minimum, lapcli.points_frame, by the auction.)"""
    n = 1500
    a, b = rng.random((n, 2)), rng.random((n, 2))
    solution = lapcli.solve_points(a, b, "euclidean", solver="cuda-sap", maximize=True, timeout=60)
    cost = distance_matrix(a, b, "euclidean")
    assert solution.report.details["start"] == "column reduction" and solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=True)].sum(), rel=1e-12)


@pytest.mark.parametrize("budget", [0.0, 0.003])
@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
def test_the_point_auction_hands_over_wherever_its_budget_stops_it(rng, monkeypatch, metric, budget):
    """A budget of nothing (the first phase's first bids stopped at once) or of a few rounds: the
    searches start from the auction's duals where it stopped, keep only the pairs within twice the
    last phase's ε of their row's minimum, and finish exactly."""
    from lapcli.engines.cuda import sap_start

    monkeypatch.setattr(sap_start, "AUCTION_BUDGET_MIN_S", budget)
    monkeypatch.setattr(sap_start, "AUCTION_BUDGET_PER_ROW_S", 0.0)
    n = 1500
    a, b = rng.random((n, 2)), rng.random((n, 2))
    solution = lapcli.solve_points(a, b, metric, solver="cuda-sap", timeout=60)
    details = solution.report.details
    assert solution.report.certified and details["auction_budget_spent"] and details["auction_budget_s"] == budget
    assert details["tail_searches"] > 0 and solution.report.steps[-1].name == "shortest augmenting paths"
    if budget == 0.0:
        assert details["auction_phases"] == 1
    cost = distance_matrix(a, b, metric)
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_a_budget_spent_between_two_phases_reports_the_phase_that_ran(rng, monkeypatch):
    """The budget runs out once the first phase has ended, before the second's first round: the
    auction reports the one phase it ran and its ε (no empty phase at the next, finer ε), and the
    searches finish exactly from that state."""
    import time
    import types

    from lapcli.cuda import auction

    skipped, ended = [0.0], []
    monkeypatch.setattr(auction, "time", types.SimpleNamespace(perf_counter=lambda: time.perf_counter() + skipped[0]))

    def progress(phase, phases_left):  # the auction's clock jumps past its budget when the first phase ends
        if phase.ended:
            ended.append(phase)
            skipped[0] = 1e6

    n = 1500
    a, b = rng.random((n, 2)), rng.random((n, 2))
    solution = lapcli.solve_points(a, b, solver="cuda-sap", progress=progress)
    details = solution.report.details
    assert details["auction_budget_spent"] and len(ended) == 1 and ended[0].bids > 0
    assert details["auction_phases"] == 1 and details["auction_final_eps"] == ended[0].eps
    names = [step.name for step in solution.report.steps]
    assert [name for name in names if name.startswith("auction")] == [f"auction, eps {ended[0].eps:.3g}"]
    assert names[-1] == "shortest augmenting paths"
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


@pytest.mark.parametrize("kind", ["ties", "apart", "duplicates"])
def test_the_auction_where_near_columns_do_not_hold_the_answer(rng, kind):
    """Costs whose optimum is far from each row's near columns (the two sets apart: every row's
    nearest columns are the same few), all costs tied, repeated points: the release pass brings
    the missing columns in (or the bids scan all columns), and the answer is optimal. Tied rows
    start from their own columns (kernels/auction.cu's auction_candidates); the apart sets' price
    war outlasts the auction's budget and the searches finish it (sap_points.points_budget)."""
    n = 1500
    if kind == "ties":
        a, b = np.zeros((n, 2)), np.zeros((n, 2))
    elif kind == "apart":
        a, b = rng.normal(scale=0.01, size=(n, 2)), rng.normal(loc=3.0, size=(n, 2))
    else:
        a, b = rng.integers(0, 4, size=(n, 2)).astype(float), rng.integers(0, 4, size=(n, 2)).astype(float)
    solution = lapcli.solve_points(a, b, "euclidean", solver="cuda-sap", timeout=60)
    cost = distance_matrix(a, b, "euclidean")
    assert solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12, abs=1e-12)


def test_loaded_point_programs_leave_a_solve_nothing_to_compile(rng, monkeypatch):
    """sap_points.load_programs (what lap bench loads before a large cell) loads the very programs a
    square point solve runs, the auction's and its last rows' searches': the solve then reports
    no compile time. The programs are dropped from this process first, and chains of 2 bids leave
    rows to the searches."""
    from lapcli.cuda import points as device_points
    from lapcli.cuda.runtime import current_gpu
    from lapcli.engines.cuda import sap_points

    metric, n = "chebyshev", 2048
    for program in (device_points.program(metric, 2, "auction"),
                    device_points.program(metric, 2, "tail", threads=sap_points.tail_block_threads(2))):
        current_gpu().kernels.pop(program, None)
    assert sap_points.load_programs(metric, 2) > 0
    monkeypatch.setattr(sap_points, "points_chain_limit", lambda n: 2)
    monkeypatch.setattr(sap_points, "COARSE_FIRST_UP_TO", 0)  # every phase's chains of 2
    solution = lapcli.solve_points(rng.random((n, 2)), rng.random((n, 2)), metric, solver="cuda-sap")
    assert solution.report.certified and solution.report.details["tail_searches"] > 0
    assert solution.report.details["compile_ms"] == 0


def test_the_auction_honours_its_time_limit(rng):
    a, b = rng.random((20000, 2)), rng.random((20000, 2))
    # the error says where it stopped: the phase, its ε, the round and the rows holding a column
    with pytest.raises(SolverError, match=r"time limit in phase \d+ of \d+ \(eps [^)]+\), round \d+: [\d,]+ of "
                                          r"20,000 rows held a column"):
        lapcli.solve_points(a, b, solver="cuda-sap", timeout=0.02)


@pytest.mark.parametrize("shape", [(1, 1), (2, 5), (300, 300), (3000, 3000), (500, 3000), (3000, 500)])
@pytest.mark.parametrize("maximize", [False, True])
def test_answers_are_optimal_and_certified(rng, shape, maximize):
    n, m = shape
    a, b = rng.random((n, 2)), rng.random((m, 2))
    solution = lapcli.solve_points(a, b, solver="cuda-sap", maximize=maximize)
    cost = distance_matrix(a, b, "sqeuclidean")
    rows, cols = scipy_lsa(cost, maximize=maximize)
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12, abs=1e-12)
    assert solution.report.certified and solution.report.solver == "cuda-sap"
    u, v = solution.duals
    signed = -cost if maximize else cost
    k = min(n, m)
    work_cost = signed if n <= m else signed.T
    work_cols = np.empty(k, dtype=np.int64)
    if n <= m:
        work_cols[solution.row_ind] = solution.col_ind
        work_u, work_v = (u, v) if not maximize else (-u, -v)
    else:
        work_cols[solution.col_ind] = solution.row_ind
        work_u, work_v = (v, u) if not maximize else (-v, -u)
    check_duals(work_cost[None], work_cols[None], work_u[None], work_v[None], eps=1e-9)


@pytest.mark.parametrize("metric, p", METRICS)
def test_every_metric_equals_the_dense_route(rng, metric, p):
    a, b = rng.normal(size=(900, 3)), rng.normal(size=(1100, 3))
    implicit = lapcli.solve_points(a, b, metric, p=p, solver="cuda-sap")
    dense = lapcli.solve_points(a, b, metric, p=p, solver="scipy", certify=True)
    assert implicit.report.certified and dense.report.certified
    assert implicit.objective == pytest.approx(dense.objective, rel=1e-12)
    assert metric in implicit.report.details["costs"]


def test_cupy_float32_points_and_auto_above_2048(rng):
    import cupy

    from lapcli.engines.auto import points_matrix_on_device

    a = cupy.asarray(rng.random((2100, 2)), dtype=cupy.float32)
    b = cupy.asarray(rng.random((2100, 2)), dtype=cupy.float32)
    solution = lapcli.solve_points(a, b)
    if points_matrix_on_device(prepare_points(a, b)):
        assert "built on the GPU" in solution.report.details["costs"]
    cost = distance_matrix(a.get().astype(np.float64), b.get().astype(np.float64), "sqeuclidean")
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


@pytest.mark.parametrize("metric, kind", [("sqeuclidean", "uniform"), ("cityblock", "clustered")])
def test_auto_solves_a_host_square_as_its_matrix_on_the_gpu(rng, metric, kind):
    """2,500 host points a side: auto builds the cdist matrix on the GPU; the answer comes back as
    NumPy, certified, with scipy's objective and, on uniform points, the auction's on the
    coordinates (clustered cityblock points there can take minutes at this size: past 60 s on an
    H100, docs/points.md, "Where it is slow")."""
    from lapcli.engines.auto import points_matrix_on_device
    from lapcli.generate import generate_points

    a, b = generate_points(2500, 2, kind=kind, seed=11), generate_points(2500, 2, kind=kind, seed=12)
    if not points_matrix_on_device(prepare_points(a, b, metric)):
        pytest.skip("no Hopper GPU with room for the matrix")
    solution = lapcli.solve_points(a, b, metric)
    assert "built on the GPU" in solution.report.details["costs"] and solution.report.certified
    assert all(isinstance(x, np.ndarray) for x in (solution.row_ind, solution.col_ind, *solution.duals))
    cost = distance_matrix(a, b, metric)
    if kind == "uniform":
        implicit = lapcli.solve_points(a, b, metric, solver="cuda-sap", timeout=120)
        assert solution.objective == pytest.approx(implicit.objective, rel=1e-12)
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    assert sorted(solution.col_ind.tolist()) == list(range(2500))


def test_no_matrix_is_allocated(rng):
    """2000 × 30,000 points: the dense matrix would be 480 MB; the solve's device memory stays
    O((n + m)·d) plus the search's state."""
    import cupy

    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    held = pool.total_bytes()  # arrays other code still holds (a test's traceback, a cache)
    a, b = rng.random((2000, 2)), rng.random((30000, 2))
    solution = lapcli.solve_points(a, b, solver="cuda-sap")
    assert solution.report.certified and len(solution.row_ind) == 2000
    assert pool.total_bytes() - held < 16 * 2**20  # the pool keeps what the solve allocated: its peak
    assert len(np.unique(solution.col_ind)) == 2000


def test_the_searches_after_the_auction_say_how_far_they_got_past_the_time_limit(rng):
    """Past its time limit (checked between searches) the searches that finish a point auction
    raise one line saying how many of the rows handed to them were searched (the free rows and
    those whose pair the hand-over did not keep, not the kept ones) and where the auction stopped:
    a limit of 1 ns, so one search."""
    import cupy

    from lapcli.cuda import auction
    from lapcli.cuda import points as points_on_device
    from lapcli.engines.cuda import sap_points

    n = 3000
    a, b = rng.random((n, 2)), rng.random((n, 2))
    cost = distance_matrix(a, b, "sqeuclidean")
    col_of_row, taken = np.full(n, -1, dtype=np.int32), np.zeros(n, dtype=bool)
    for i in range(n):  # a row takes its least column where that is free: kept (v = 0, gap 0)
        j = int(cost[i].argmin())
        if not taken[j]:
            col_of_row[i], taken[j] = j, True
    kept = int((col_of_row >= 0).sum())
    others = np.flatnonzero(col_of_row < 0)
    held_off = others[: len(others) // 2]  # these hold a column above their least: not kept
    col_of_row[held_off] = np.flatnonzero(~taken)[: len(held_off)]
    held = col_of_row >= 0
    gap = cost[np.flatnonzero(held), col_of_row[held]] - cost[held].min(axis=1)
    handed = n - int((gap <= 2e-9).sum())  # the hand-over's rule at final eps 1e-9 (v = 0)
    points = points_on_device.upload(prepare_points(a, b), "auction")
    found = auction.AuctionResult(cupy.asarray(col_of_row), cupy.zeros(n), 1e-3, complete=False, budget_spent=True)
    expected = (f"the exact searches ran past the time limit: 1 of the {handed:,} rows handed to them were "
                "searched (the auction at eps 0.001, its time budget stopped it)")
    with pytest.raises(SolverError) as raised:
        sap_points._searched_tail(points, found, sap_points.tail_threads(n, 2), 1e-9, 1e-9, {})
    assert str(raised.value) == expected and n - kept - len(held_off) < handed <= n - kept
