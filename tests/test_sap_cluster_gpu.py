"""kernels/sap.cu: shortest augmenting paths with each search spread over a thread-block cluster,
against its NumPy twin (exactly, for integers), scipy and the certificate (pytest -m gpu)."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.errors import LapInputError
from lapcli.twins import check_duals, column_reduction, reference_stack

from .helpers import assert_matches_scipy, uniform_costs

pytestmark = pytest.mark.gpu


def points(rng, n, m, scale=None):
    a, b = rng.random((n, 2)), rng.random((m, 2))
    cost = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return cost if scale is None else np.round(cost / cost.max() * scale).astype(np.int64)


def cluster_solve(cost, start):
    """The kernel on ``cost`` from ``start`` ("columns": the column reduction, None: v = 0, no row
    assigned); host (col_of_row, v, stats)."""
    import cupy

    from lapcli.cuda import sap_cluster

    v0, col0 = column_reduction(cost.astype(np.int64 if cost.dtype.kind in "iu" else np.float64)) \
        if start == "columns" else (None, None)
    result = sap_cluster.solve(cupy.asarray(cost), None if v0 is None else cupy.asarray(v0),
                               None if col0 is None else cupy.asarray(col0.astype(np.int32)))
    stats = dict(zip(sap_cluster.STATS, result.stats.get().tolist()))
    return result.col_of_row.get(), result.v.get(), stats


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (7, 7), (100, 100), (333, 333), (1000, 1000), (3000, 3000),
                                   (9000, 9000), (1, 5), (40, 1000), (777, 1500), (2000, 9000)])
def test_integer_answers_and_duals_equal_the_twins(rng, shape):
    """Same search order and tie-break as lapcli.twins.reference_stack: the same columns and duals,
    exactly; more columns than the 8 × 256 threads hold (9000) take several slots."""
    k, m = shape
    big = k * m > 4_000_000
    cost = points(rng, k, m, 10**6) if big else uniform_costs(rng, k, m, 10, dtype=np.int32)
    start = "columns" if k == m else None
    columns, v, stats = cluster_solve(cost, start)
    assert stats["status"] == 0
    if big:  # the twin would take minutes: the certificate and scipy instead
        u = cost[np.arange(k), columns] - v[columns]
        check_duals(cost[None], columns[None], u[None], v[None])
        assert cost[np.arange(k), columns].sum() == cost[scipy_lsa(cost)].sum()
        return
    twin_columns, twin_u, twin_v, _ = reference_stack(cost[None], reduction_start=k == m)
    assert np.array_equal(columns, twin_columns[0]) and np.array_equal(v, twin_v[0])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(500, 500), (300, 2500), (2500, 2500)])
def test_float_answers_are_certified_and_optimal(rng, dtype, shape):
    k, m = shape
    cost = points(rng, k, m).astype(dtype)
    columns, v, stats = cluster_solve(cost, "columns" if k == m else None)
    assert stats["status"] == 0 and stats["searches"] >= 1 and stats["steps"] >= stats["searches"]
    wide = cost.astype(np.float64)
    u = wide[np.arange(k), columns] - v[columns]
    check_duals(wide[None], columns[None], u[None], v[None], eps=1e-9)
    assert wide[np.arange(k), columns].sum() == pytest.approx(wide[scipy_lsa(wide)].sum(), rel=1e-12)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("maximize", [False, True])
def test_the_engine_above_one_block_matches_scipy(rng, dtype, maximize):
    """n = 2500: past the one-block kernel, so the ε-scaling auction, then the cluster's searches
    from its duals for integers (exact int64 duals); maximised distances, where the auction's
    prices must climb far, too (its budget then hands over to the searches)."""
    cost = points(rng, 2500, 2500, 10**6).astype(dtype) if dtype[0] == "i" else points(rng, 2500, 2500).astype(dtype)
    solution = lapcli.solve(cost, solver="cuda-sap", maximize=maximize)
    details = solution.report.details
    assert solution.report.certified and details["start"] == "epsilon-scaling auction"
    assert {"h2d_ms", "kernel_ms", "d2h_ms"} <= set(details)  # with or without a search
    assert_matches_scipy(solution, cost, maximize=maximize)
    if dtype[0] == "i":
        assert solution.duals[0].dtype == solution.duals[1].dtype == np.int64
        assert details["search_layout"].startswith("cluster")
        if not maximize:  # the floored duals of ε = 1/(4n), and the chain limit's tail, leave few rows to search
            from lapcli.engines.cuda.sap_start import AUCTION_TAIL_ROWS

            assert details["auction_complete"] or 0 < details["auction_left_free"] <= AUCTION_TAIL_ROWS
            assert details["free_after_auction"] <= 250


@pytest.mark.parametrize("dtype", ["int32", "float64"])
@pytest.mark.parametrize("budget", [0.0, 0.003])
def test_the_auction_hands_over_wherever_its_budget_stops_it(rng, monkeypatch, dtype, budget):
    """A budget of nothing (the first round's bids stopped at once) or of a few rounds: the
    searches finish exactly from whatever duals the auction had."""
    from lapcli.engines.cuda import sap_start

    monkeypatch.setattr(sap_start, "AUCTION_BUDGET_MIN_S", budget)
    monkeypatch.setattr(sap_start, "AUCTION_BUDGET_PER_ROW_S", 0.0)
    cost = points(rng, 2300, 2300, 10**6 if dtype[0] == "i" else None).astype(dtype)
    solution = lapcli.solve(cost, solver="cuda-sap")
    details = solution.report.details
    assert solution.report.certified and not details["auction_complete"] and details["free_after_auction"] > 0
    if budget == 0.0:
        assert details["auction_phases"] == 1
    assert_matches_scipy(solution, cost)


@pytest.mark.parametrize("max_chain, tail_rows", [(1, 10**6), (3, 5)])
def test_rows_a_chain_limit_leaves_free_go_to_the_searches(rng, monkeypatch, max_chain, tail_rows):
    """Integer squares: chains cut after a bid or three, their rows carried to the next phase and,
    after the last one, searched; the answer is optimal with exact duals whatever is left."""
    from lapcli.cuda import auction
    from lapcli.engines.cuda import sap_start

    monkeypatch.setattr(sap_start, "chain_limit", lambda n: max_chain)
    monkeypatch.setattr(sap_start, "AUCTION_TAIL_ROWS", tail_rows)
    monkeypatch.setattr(sap_start, "AUCTION_BUDGET_MIN_S", 60.0)  # no budget stop: only the chain limit's
    found = []
    solve = auction.solve
    monkeypatch.setattr(auction, "solve", lambda *a, **k: found.append(result := solve(*a, **k)) or result)
    cost = points(rng, 2300, 2300, 10**6).astype(np.int32)
    solution = lapcli.solve(cost, solver="cuda-sap")
    assert solution.report.certified and isinstance(solution.duals[0][0], np.integer)
    result = found[0]
    assert any(phase.left_free for phase in result.phases)
    assert all(phase.longest_chain <= max_chain for phase in result.phases)
    if not result.complete:  # the last phase's tail: exactly the rows it left free, handed to the searches
        assert int((result.col_of_row < 0).sum()) == result.phases[-1].left_free > 0
        assert solution.report.details["auction_left_free"] == result.phases[-1].left_free
    if tail_rows > 2300:  # a phase ends at its first round that parks a row: the last one's are searched
        assert not result.complete and solution.report.details["free_after_auction"] > 0
    assert_matches_scipy(solution, cost)


@pytest.mark.parametrize("n, dtype", [(1500, "float32"), (2300, "float64")])
def test_a_float_tail_is_searched_from_duals_within_two_eps(rng, monkeypatch, n, dtype):
    """Floats: chains cut after two bids, the last phase's rows go to the searches (one block at
    1500, with the scaled start forced there; a cluster at 2300), every other row kept within that
    phase's 2ε and its pair lowered to its row's minimum while they run (in a float64 copy of a
    float32 matrix: its ulps are coarser than 2ε); the answer is optimal and certified, and the
    caller's matrix is as it was."""
    import cupy

    from lapcli.cuda import auction
    from lapcli.engines.cuda import sap as cuda_sap
    from lapcli.engines.cuda import sap_start

    monkeypatch.setattr(cuda_sap, "SCALED_AUCTION_FROM_FLOATS", 0)
    monkeypatch.setattr(sap_start, "chain_limit", lambda n: 2)
    monkeypatch.setattr(sap_start, "AUCTION_TAIL_ROWS", 10**6)
    monkeypatch.setattr(sap_start, "AUCTION_BUDGET_MIN_S", 60.0)
    found = []
    solve = auction.solve
    monkeypatch.setattr(auction, "solve", lambda *a, **k: found.append(result := solve(*a, **k)) or result)
    from lapcli.problem import prepare

    cost = points(rng, n, n).astype(dtype)
    problem = prepare(cupy.asarray(cost))
    solution = cuda_sap.solve(problem)
    # the lowered pairs put back in the work matrix the problem keeps (float64: lowered in place)
    assert np.array_equal(problem.work_on(cupy).values.get(), prepare(cost).work_on(cupy).values.get())
    assert solution.certificate is not None
    solution = lapcli.solve(cost, solver="cuda-sap")
    details, result = solution.report.details, found[-1]
    assert solution.report.certified and details["start"] == "epsilon-scaling auction"
    assert all(phase.longest_chain <= 2 for phase in result.phases)
    assert not result.complete and result.phases[-1].left_free > 0
    assert 0 < details["free_after_auction"] <= result.phases[-1].left_free + n // 50
    assert details["lowered_pairs"] > n // 10  # kept within 2ε, not exactly tight
    assert details["search_layout"].startswith("cluster" if n > cuda_sap.ONE_BLOCK_UP_TO else "K=")
    assert_matches_scipy(solution, cost)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_the_one_block_searches_from_the_scaled_auction_match_scipy(rng, monkeypatch, dtype):
    """The ε-scaling auction's start forced down the one-block sizes: integers from 2 columns
    (floats from its AUCTION_FROM), the searches in one block from its duals; maximised costs keep
    the row reduction."""
    from lapcli.cuda.auction import AUCTION_FROM
    from lapcli.engines.cuda import sap as cuda_sap

    monkeypatch.setattr(cuda_sap, "SCALED_AUCTION_FROM_FLOATS", 0)
    monkeypatch.setattr(cuda_sap, "SCALED_AUCTION_FROM_INTEGERS", 0)
    integers = dtype[0] == "i"
    for n in (2, 3, 17, 300, 1024, 1500, 2048):
        for cost in (points(rng, n, n, 10**6 if integers else None), uniform_costs(rng, n, n, 0.1),
                     uniform_costs(rng, n, n, 1000) + (0 if integers else rng.random((n, n)))):
            solution = lapcli.solve(cost.astype(dtype), solver="cuda-sap")
            auctioned = integers or n >= AUCTION_FROM
            assert solution.report.details["start"] == ("epsilon-scaling auction" if auctioned
                                                        else "augmenting row reduction")
            assert not solution.report.details.get("search_layout", "").startswith("cluster")
            assert_matches_scipy(solution, cost.astype(dtype))
    maximised = lapcli.solve(points(rng, 1500, 1500).astype(dtype), solver="cuda-sap", maximize=True)
    assert maximised.report.details["start"] == "augmenting row reduction"  # no price war for the auction


@pytest.mark.parametrize("auction", [True, False])
def test_every_size_through_the_cluster_path(rng, monkeypatch, auction):
    """The cluster path forced down to tiny sizes, with and without the auction (the column
    reduction start), rectangular, forbidden entries and device input."""
    import cupy

    from lapcli.engines.cuda import sap as cuda_sap
    from lapcli.problem import prepare

    monkeypatch.setattr(cuda_sap, "ONE_BLOCK_UP_TO", 0)
    for n in (1, 2, 3, 17, 64, 300):
        for cost in (uniform_costs(rng, n, n, 0.1), uniform_costs(rng, n, n, 1000), rng.random((n, n))):
            result = cuda_sap.solve(prepare(cost), auction_rounds=10**6 if auction else 0)
            expected = cost[scipy_lsa(cost)].sum()
            assert result.certificate is not None
            assert cost[result.rows, result.cols].sum() == pytest.approx(expected)
    wide = rng.random((150, 260))
    assert_matches_scipy(lapcli.solve(wide, solver="cuda-sap"), wide)
    forbidden = rng.random((200, 200))
    forbidden[rng.random((200, 200)) < 0.3] = np.inf
    assert_matches_scipy(lapcli.solve(forbidden.copy(), solver="cuda-sap"), forbidden)
    on_device = cupy.asarray(uniform_costs(rng, 400, 400, 1000, dtype=np.int32))
    assert_matches_scipy(lapcli.solve(on_device, solver="cuda-sap"), on_device.get())


def test_a_moving_answer_would_be_a_race(rng):
    """From the column reduction the searches are deterministic: the same columns and steps every
    run. The auction's bids run in no fixed order, so from it only the optimum is fixed."""
    from lapcli.engines.cuda import sap as cuda_sap
    from lapcli.problem import prepare

    cost = points(rng, 4096, 4096, 10**6).astype(np.int32)
    first = cuda_sap.solve(prepare(cost), auction_rounds=0)
    optimum = cost[first.rows, first.cols].sum()
    for _ in range(3):
        again = cuda_sap.solve(prepare(cost), auction_rounds=0)
        assert np.array_equal(again.cols, first.cols)
        assert again.details["search_steps"] == first.details["search_steps"]
        auctioned = lapcli.solve(cost, solver="cuda-sap")
        assert cost[auctioned.row_ind, auctioned.col_ind].sum() == optimum


def test_the_time_limit_stops_between_searches(rng):
    cost = points(rng, 6000, 6000)
    with pytest.raises(lapcli.SolverError, match="time limit"):
        lapcli.solve(cost, solver="cuda-sap", timeout=0.02)


def test_more_columns_than_the_cluster_holds_is_a_clear_error(rng, monkeypatch):
    from lapcli.cuda import sap_cluster

    monkeypatch.setattr(sap_cluster, "device_max_columns", lambda: 2500)
    with pytest.raises(LapInputError, match="at most 2500 columns on this GPU"):
        lapcli.solve(uniform_costs(rng, 2501, 2501, 1), solver="cuda-sap")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_auto_sends_large_minimised_floats_to_the_cluster(rng, dtype):
    import cupy

    cost = points(rng, 2600, 2600).astype(dtype)
    for given in (cost, cupy.asarray(cost), rng.random((2600, 2600)).astype(dtype)):
        solution = lapcli.solve(given)
        assert solution.report.solver == "cuda-sap" and "ε-scaling auction" in solution.report.reason
        assert solution.report.certified
        assert_matches_scipy(solution, given.get() if isinstance(given, cupy.ndarray) else given)
    assert lapcli.solve(cost, maximize=True).report.solver == "cuda"


@pytest.mark.parametrize("shape", [(1, 2600), (500, 3000), (2100, 4500), (3000, 500), (120, 700)])
def test_rectangular_problems_are_solved_as_they_are(rng, shape):
    """k × m with k ≠ m: no padding to a square, no auction; over a cluster above 2048 columns (after
    transposing a tall one) the searches from v = 0, in one block below from the batch kernel's row
    reduction and its transfer. Integer answers and duals are the twin's exactly (its cold start,
    or its row reduction); floats match scipy, maximised too."""
    cost = uniform_costs(rng, *shape, 100, dtype=np.int32)
    solution = lapcli.solve(cost, solver="cuda-sap")
    assert solution.report.details["rectangular"] == f"{min(shape)}x{max(shape)}"
    assert solution.report.certified and solution.report.details["auction_rounds"] == 0
    assert_matches_scipy(solution, cost)
    work = cost if shape[0] < shape[1] else cost.T
    from lapcli.engines.cuda import sap as cuda_sap

    one_block = max(shape) <= cuda_sap.ONE_BLOCK_UP_TO
    twin_columns, twin_u, twin_v, _ = reference_stack(work[None].astype(np.int64), reduction_start=one_block)
    u, v = solution.duals
    if shape[0] < shape[1]:
        assert np.array_equal(solution.col_ind, twin_columns[0]) and np.array_equal(v, twin_v[0])
    else:
        assert np.array_equal(u, twin_v[0])  # the work's columns are the caller's rows
    floats = rng.random(shape)
    assert_matches_scipy(lapcli.solve(floats, solver="cuda-sap", maximize=True), floats, maximize=True)
