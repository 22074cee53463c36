"""The ε-scaling auction of square point problems (kernels/auction.cu, lapcli.cuda.auction) on the
CPU: its schedule, and its NumPy twin (lapcli.twins.auction_twin, the kernel's rules with the bids
one at a time) against scipy on the costs that make an auction work hard."""

import io

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

from lapcli.cuda import auction
from lapcli.points import distance_matrix
from lapcli.twins import auction_twin, check_duals, hand_over, reference_stack
from lapcli.twins.auction import near_columns
from lapcli.work import float_eps


def fake_points(k, m=None, metric="sqeuclidean", dim=2):
    """What the warm start's and the coarse phase's rules read of a DevicePoints: its sizes,
    metric and dimension."""
    from types import SimpleNamespace

    return SimpleNamespace(k=k, m=k if m is None else m, metric=metric, rows=np.zeros((1, dim)))


def test_the_schedule_falls_by_the_scaling_to_the_final_eps():
    phases = auction.schedule(1.0, 1e-6, scaling=10.0)
    assert phases[0] == 1.0 and phases[-1] == 1e-6
    assert np.allclose(np.array(phases[:-1])[1:] / np.array(phases[:-1])[:-1], 0.1)
    assert all(later < earlier for earlier, later in zip(phases, phases[1:]))
    assert auction.schedule(0.0, 1e-9) == [1e-9]  # all costs tied: one phase
    with pytest.raises(ValueError, match="positive"):
        auction.schedule(1.0, 0.0)
    with pytest.raises(ValueError, match="finite"):  # an infinite spread would never fall to the last eps
        auction.schedule(float("inf"), 1e-9)


def solved_by_the_twin(cost, floor=True):
    n = cost.shape[0]
    final_eps = float_eps(n, float(np.abs(cost).max())) / 8  # as engine cuda-sap sets it
    col_of_row, v, phases = auction_twin(cost, final_eps, max_bids=300_000, floor=floor)
    assert sorted(col_of_row.tolist()) == list(range(n))
    u = cost[np.arange(n), col_of_row] - v[col_of_row]
    assert (cost - u[:, None] - v[None, :]).min() >= -2 * final_eps
    return col_of_row, phases


def test_the_block_bids_hold_every_block_the_launcher_may_choose():
    """auction_bid_blocks keeps a full scan's per-thread entries in shared arrays of AUCTION_BLOCK_MAX
    entries; every block of BLOCK_THREADS fits them, and holds a thread a candidate."""
    import re

    from lapcli.cuda.sap_cluster import kernel_text

    block_max = int(re.search(r"#define AUCTION_BLOCK_MAX (\d+)", kernel_text("auction.cu")).group(1))
    assert all(auction.CANDIDATES <= threads <= block_max and threads % 32 == 0 for threads in auction.BLOCK_THREADS)


@pytest.mark.parametrize("n", [40, 150])
def test_the_twin_is_optimal_on_uniform_points(rng, n):
    """(From n = 40: below, 2ε is a few ulps of the costs and rounding alone passes it; engine
    cuda-sap runs the auction from AUCTION_FROM points.)"""
    a, b = rng.random((n, 2)), rng.random((n, 2))
    cost = distance_matrix(a, b, "sqeuclidean")
    col_of_row, phases = solved_by_the_twin(cost)
    assert cost[np.arange(n), col_of_row].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12, abs=1e-15)
    assert phases[-1][0] == pytest.approx(float_eps(n, float(cost.max())) / 8)


@pytest.mark.parametrize("kind", ["ties", "apart", "grid"])
def test_the_twin_where_near_columns_do_not_hold_the_answer(rng, kind):
    """All costs tied; two sets apart (every row's near columns are the same few, too few for a
    matching: without a row's full scans the bids would never end); repeated points. Past 256 bids
    a row scans every column (the rule without a floor) or only where its floor cannot prove its
    candidates' best (the twin checks each such proof against a full scan); either way the release
    pass adds what is missing in few rounds."""
    n = 300  # above the 128 near columns a row starts with
    if kind == "ties":
        a = b = np.zeros((n, 2))
    elif kind == "apart":
        a, b = rng.normal(scale=0.01, size=(n, 2)), rng.normal(loc=3.0, size=(n, 2))
    else:
        a, b = rng.integers(0, 3, size=(n, 2)).astype(float), rng.integers(0, 3, size=(n, 2)).astype(float)
    cost = distance_matrix(a, b, "euclidean")
    optimum = cost[scipy_lsa(cost)].sum()
    for floor in (False, True):
        col_of_row, phases = solved_by_the_twin(cost, floor)
        assert cost[np.arange(n), col_of_row].sum() == pytest.approx(optimum, rel=1e-12, abs=1e-12)
        assert all(rounds <= 16 for _, rounds, *_ in phases)


def test_tied_rows_start_from_their_own_columns_and_bid_once():
    """All costs tied (every point the same): row i's candidates are columns i to i + 127 and its
    bid goes to column i, n bids in all (from the lowest columns on, every row's candidates were
    the same 128 columns: 155,466 bids for these 300 rows, 1.8 M for 1,000)."""
    n = 300
    cost = np.zeros((n, n))
    for i in (0, 5, 100):  # windows that do not wrap
        assert sorted(near_columns(cost[i], i).ravel().tolist()) == list(range(i, i + 128))
    assert sorted(near_columns(cost[299], 299).ravel().tolist()) == sorted({299, *range(128)} - {107})
    col_of_row, phases = solved_by_the_twin(cost)
    assert sum(phase[2] for phase in phases) == n and np.array_equal(col_of_row, np.arange(n))


def test_a_floor_spares_the_price_wars_full_scans():
    """Uniform points' cityblock costs: a last phase's price war goes past 256 bids a row, and
    without a floor each such bid scans every column; with it the candidates prove most of them
    (here 92 full scans -> 3 at 1,024 points; 433 -> 6 at 4,096), and the twin checks each proof
    against a full scan. A full scan refills all 160 candidates: a floor under each lane's best
    alone left 49 of the 92. A fixed draw: most draws at this size wage no such war."""
    n = 1024
    rng = np.random.default_rng(5)
    a, b = rng.random((n, 2)), rng.random((n, 2))
    cost = distance_matrix(a, b, "cityblock")
    full_scans = {}
    for floor in (False, True):
        col_of_row, phases = solved_by_the_twin(cost, floor)
        assert cost[np.arange(n), col_of_row].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
        full_scans[floor] = sum(phase[4] for phase in phases)
    assert 0 < full_scans[True] < 0.2 * full_scans[False]


@pytest.mark.parametrize("n", [1000, 150, 20])
def test_a_full_scans_refill_keeps_each_lanes_least_and_floors_the_rest(rng, n):
    """The refill rule the kernels are tested against (lapcli.twins.auction._refill_of_a_full_scan):
    slot s·32 + l holds lane l's s-th least reduced cost among columns l, l + 32, … (the lowest
    column first on ties, −1 where the lane has no more), and the floor is the least reduced cost
    of every column left out (inf: none)."""
    from lapcli.twins.auction import _refill_of_a_full_scan

    slots = auction.NEAR + 1
    reduced = rng.integers(0, 12, n).astype(np.float64)  # many ties
    refill, floor = _refill_of_a_full_scan(reduced, slots)
    grid = refill.reshape(slots, 32)
    for lane in range(32):
        mine = sorted(range(lane, n, 32), key=lambda j: (reduced[j], j))[:slots]
        assert grid[:, lane].tolist() == mine + [-1] * (slots - len(mine))
    left_out = np.setdiff1d(np.arange(n), refill)
    assert floor == (reduced[left_out].min() if len(left_out) else np.inf)


@pytest.mark.parametrize("n, grid", [(200, 0), (200, 6), (600, 0), (400, 6)])
def test_bids_ruled_by_the_floor_from_the_fifth_are_a_full_scans_or_smaller(rng, monkeypatch, n, grid):
    """With the floor ruling from a row's fifth bid in a phase (uniform points, and a grid's tied
    costs), hundreds of bids are proved from the candidates and hundreds scan all columns; the twin
    checks each proof against a full scan (it raises on a bid no full scan allows), and the answer
    is optimal."""
    monkeypatch.setattr(auction, "DENSE_AFTER", 4)
    a, b = ((rng.integers(0, grid, (n, 2)) / grid, rng.integers(0, grid, (n, 2)) / grid) if grid
            else (rng.random((n, 2)), rng.random((n, 2))))
    cost = distance_matrix(a, b, "cityblock")
    col_of_row, phases = solved_by_the_twin(cost)
    assert cost[np.arange(n), col_of_row].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12, abs=1e-12)
    full_scans, proved = sum(phase[4] for phase in phases), sum(phase[5] for phase in phases)
    assert full_scans > 100 and proved > 100


def test_the_progress_line_follows_the_rounds_and_phases():
    """lap solve --points on a terminal: a transient line after each round (its phase, ε and the
    rows holding a column) and each phase's end; none when quiet or piped."""
    from rich.console import Console

    from lapcli.cli.points import phase_progress

    def last_line(*calls) -> str:  # what the line shows after these calls (Rich draws the last state)
        console = Console(file=io.StringIO(), force_terminal=True, width=200)
        with phase_progress(console, quiet=False, rows=4096) as follow:
            for phase, left in calls:
                follow(phase, left)
        return console.file.getvalue()

    first_round = (auction.Phase(1e-3, 1, 4096, 9000, 0, 12, 1.5, left_free=96, ended=False), 2)
    first_end = (auction.Phase(1e-3, 2, 4192, 9300, 0, 12, 1.5), 2)
    second_round = (auction.Phase(1e-4, 1, 100, 200, 0, 3, 0.5, left_free=7, ended=False), 1)
    assert "phase 1 of 3, ε 0.001, round 1: 4,000 of 4,096 rows hold a column, 9,000 bids" in last_line(first_round)
    assert "phase 1 of 3, ε 0.001, round 2: 4,096 of 4,096 rows hold a column, 9,300 bids" in last_line(
        first_round, first_end)
    assert "phase 2 of 3, ε 0.0001, round 1: 4,089 of 4,096 rows hold a column, 200 bids" in last_line(
        first_round, first_end, second_round)
    console = Console(file=io.StringIO(), force_terminal=True, width=200)
    with phase_progress(console, quiet=True, rows=10) as follow:
        assert follow is None
    with phase_progress(Console(file=io.StringIO()), quiet=False, rows=10) as follow:
        assert follow is None


def searched_from(cost, col_of_row, v):
    """reference_stack from hand_over's start: (its columns, the rows the start left free)."""
    v_start, col_start, searched = hand_over(cost, col_of_row, v)
    assert searched is cost  # no slack: nothing lowered
    columns, u, v_end, _ = reference_stack(cost[None], warm_start=(v_start[None], col_start[None]))
    exact = cost.dtype.kind in "iu"
    check_duals(cost[None].astype(u.dtype), columns, u, v_end, eps=0 if exact else 1e-9)  # integers exactly
    assert u.dtype == (np.int64 if exact else np.float64)
    return columns[0], int((col_start < 0).sum())


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64])
def test_the_hand_over_starts_exact_searches_from_any_duals(rng, dtype):
    """Duals the auction stopped anywhere, down to nonsense: the kept rows are tight, the others
    searched, and the answer is optimal with exact integer duals."""
    n = 70
    cost = rng.integers(0, 50 * n, (n, n)).astype(dtype)
    optimum = cost[scipy_lsa(cost)].sum()
    for v, col_of_row in ((np.zeros(n), np.full(n, -1)),
                          (rng.normal(scale=1000.0, size=n), rng.permutation(n)),
                          (-rng.random(n) * 10, np.where(rng.random(n) < 0.5, rng.permutation(n), -1))):
        columns, _ = searched_from(cost, col_of_row, v)
        assert cost[np.arange(n), columns].sum() == optimum


@pytest.mark.parametrize("kind", ["distances", "uniform"])
def test_an_integer_auction_down_to_a_quarter_over_n_leaves_few_searches(rng, kind):
    """Engine cuda-sap's integer schedule (ε down to 1/(4n), from at least 1): the assignment is
    optimal, and its floored duals leave nearly every row tight, so the exact searches are few."""
    n = 150
    if kind == "distances":
        cost = np.round(distance_matrix(rng.random((n, 2)), rng.random((n, 2)), "sqeuclidean") * 1e6).astype(np.int64)
    else:
        cost = rng.integers(0, 1000 * n, (n, n))
    col_of_row, v, phases = auction_twin(cost.astype(np.float64), 0.25 / n, max_bids=300_000, least_first_eps=1.0)
    assert phases[0][0] >= 1.0 and phases[-1][0] == 0.25 / n
    optimum = cost[scipy_lsa(cost)].sum()
    assert cost[np.arange(n), col_of_row].sum() == optimum
    columns, searched = searched_from(cost, col_of_row, v)
    assert cost[np.arange(n), columns].sum() == optimum and searched <= n // 10


def test_a_chain_limit_leaves_rows_to_the_next_phase_and_the_last_ones_to_the_searches(rng):
    """Engine cuda-sap's tail rule on integers: a chain cut after 2 bids leaves its row free; the
    next phase bids it again, and the last phase's are searched: still the optimum, exactly."""
    from lapcli.engines.cuda.sap_start import AUCTION_SCALING

    n = 150
    cost = np.round(distance_matrix(rng.random((n, 2)), rng.random((n, 2)), "sqeuclidean") * 1e6).astype(np.int64)
    col_of_row, v, phases = auction_twin(cost.astype(np.float64), 0.25 / n, scaling=AUCTION_SCALING, max_bids=300_000,
                                         least_first_eps=1.0, max_chain=2, tail_rows=n, last_tail_to_searches=True)
    assert all(rounds == 1 and left > 0 for _, rounds, _, left, *_ in phases)  # each phase ended at its first round
    assert (col_of_row < 0).sum() == phases[-1][3]
    columns, searched = searched_from(cost, col_of_row, v)
    assert cost[np.arange(n), columns].sum() == cost[scipy_lsa(cost)].sum() and searched >= phases[-1][3]
    # without the searches' hand-over the last phase bids on until every row holds a column
    col_of_row, _, phases = auction_twin(cost.astype(np.float64), 0.25 / n, scaling=AUCTION_SCALING, max_bids=300_000,
                                         least_first_eps=1.0, max_chain=2, tail_rows=n)
    assert (col_of_row >= 0).all() and phases[-1][3] == 0
    assert cost[np.arange(n), col_of_row].sum() == cost[scipy_lsa(cost)].sum()


def test_a_stalled_tail_ends_a_phase_only_once_its_rounds_stop_getting_rows_through(rng, monkeypatch):
    """The point auction's rule (``stalled_tail``, lapcli.cuda.auction.tail_ends_phase, which the
    engine and the twin share): a round ends its phase only where its chain limit left no fewer
    rows than the round before, so no phase ends at its first round; the answer is still exact."""
    from lapcli.engines.cuda.sap_start import AUCTION_SCALING

    assert auction.tail_ends_phase(5, 5, 8, True) and auction.tail_ends_phase(5, 9, 8, False)
    assert not auction.tail_ends_phase(5, 9, 8, True)  # fewer than the round before: rows get through
    assert not auction.tail_ends_phase(9, 9, 8, True) and not auction.tail_ends_phase(0, 0, 8, True)
    calls = []
    shared = auction.tail_ends_phase
    monkeypatch.setattr(auction, "tail_ends_phase", lambda *a: calls.append(a) or shared(*a))
    n = 150
    cost = np.round(distance_matrix(rng.random((n, 2)), rng.random((n, 2)), "sqeuclidean") * 1e6).astype(np.int64)
    col_of_row, v, phases = auction_twin(cost.astype(np.float64), 0.25 / n, scaling=AUCTION_SCALING, max_bids=300_000,
                                         least_first_eps=1.0, max_chain=2, tail_rows=n, last_tail_to_searches=True,
                                         stalled_tail=True)
    assert calls and all(stalled for *_, stalled in calls)
    assert any(left for _, _, _, left, *_ in phases)
    assert all(rounds >= 2 for _, rounds, _, left, *_ in phases if left)  # never at a first round
    columns, _ = searched_from(cost, col_of_row, v)
    assert cost[np.arange(n), columns].sum() == cost[scipy_lsa(cost)].sum()


def test_a_price_war_ends_its_phase_and_its_rows_bid_no_more(rng, monkeypatch):
    """The point auction's war rule (``defer_wars``, lapcli.cuda.auction.tail_wages_war, which the
    engine and the twin share): a round whose chain limit parks more than ``tail_rows`` rows, and
    more than the round before, ends its phase, and those rows are never listed again: they end
    free, for the searches, and the answer is still exact. Two clusters, three quarters of the rows
    in the one that holds a quarter of the columns: half the rows must cross, in price wars."""
    from lapcli.engines.cuda.sap_start import AUCTION_SCALING

    assert auction.tail_wages_war(9, 8, 8)
    assert not auction.tail_wages_war(8, 7, 8)  # no more than tail_rows: the tail rule's to end
    assert not auction.tail_wages_war(9, 9, 8) and not auction.tail_wages_war(9, 10, 8)  # rows get through
    n, crowded = 200, 150
    a = np.concatenate([rng.normal(0.0, 0.03, (crowded, 2)), rng.normal(1.0, 0.03, (n - crowded, 2))])
    b = np.concatenate([rng.normal(0.0, 0.03, (n - crowded, 2)), rng.normal(1.0, 0.03, (crowded, 2))])
    cost = np.round(distance_matrix(a, b, "sqeuclidean") * 1e6).astype(np.int64)
    optimum = cost[scipy_lsa(cost)].sum()
    rules = dict(scaling=AUCTION_SCALING, max_bids=300_000, least_first_eps=1.0, max_chain=2, tail_rows=2,
                 last_tail_to_searches=True, stalled_tail=True)
    col_of_row, v, phases = auction_twin(cost.astype(np.float64), 0.25 / n, defer_wars=True, **rules)
    deferred = [phase[6] for phase in phases]
    assert sum(deferred) >= n // 4
    assert all(phase[3] == phase[6] for phase in phases if phase[6])  # a war's round ended its phase
    # every deferred row ends free (none bid again), and so do the rows the last phase's tail left
    last_tail = 0 if deferred[-1] else phases[-1][3]
    assert int((col_of_row < 0).sum()) == sum(deferred) + last_tail
    columns, searched = searched_from(cost, col_of_row, v)
    assert cost[np.arange(n), columns].sum() == optimum and searched >= sum(deferred)
    # the twin's rule is the engine's: where it calls no round a war, the same auction bids its
    # wars out and leaves the searches only the last tail
    monkeypatch.setattr(auction, "tail_wages_war", lambda *args: False)
    col_of_row, v, phases = auction_twin(cost.astype(np.float64), 0.25 / n, defer_wars=True, **rules)
    assert not any(phase[6] for phase in phases) and int((col_of_row < 0).sum()) == phases[-1][3] < sum(deferred)
    columns, _ = searched_from(cost, col_of_row, v)
    assert cost[np.arange(n), columns].sum() == optimum


def test_a_float_tail_handed_over_within_two_eps_leaves_only_its_rows_to_search(rng):
    """Floats with the tail rule: kept within the last phase's 2ε of their row's minimum, only the
    rows the chains left free are searched, and the answer and its duals pass the certificate's
    tolerance; kept only where exactly tight, most rows are searched again."""
    from lapcli.problem import prepare

    n = 150
    cost = distance_matrix(rng.random((n, 2)), rng.random((n, 2)), "sqeuclidean")
    work = prepare(cost).work_on(np)
    final_eps = work.eps / 8
    col_of_row, v, phases = auction_twin(work.values, final_eps, scaling=8, max_bids=1_000_000, max_chain=3,
                                         tail_rows=n, last_tail_to_searches=True)
    left = int((col_of_row < 0).sum())
    assert left == phases[-1][3] > 0
    v_start, col_start, searched = hand_over(work.values, col_of_row, v, slack=2 * final_eps)
    assert int((col_start < 0).sum()) == left
    lowered = searched != work.values
    assert lowered.sum() > n // 2 and np.all(searched[lowered] < work.values[lowered])  # kept, not exactly tight
    columns, u, v_end, _ = reference_stack(searched[None], warm_start=(v_start[None], col_start[None]))
    # u from the lowered matrix: every true reduced cost ≥ 0 (to rounding), a kept pair within 2ε of tight
    check_duals(work.values[None], columns, u, v_end, eps=work.eps)
    reduced = work.values - u[0][:, None] - v_end[0][None, :]
    assert reduced.min() >= -final_eps / 100 and reduced[np.arange(n), columns[0]].max() <= 2 * final_eps
    assert cost[np.arange(n), columns[0]].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    assert int((hand_over(work.values, col_of_row, v)[1] < 0).sum()) > 2 * left  # exact tightness frees many


def test_an_auction_stopped_in_an_earlier_phase_hands_over_with_the_last_phases_slack(rng):
    """A budget may stop the point auction in any phase (lapcli.engines.cuda.sap_points.points_budget):
    its pairs are then within 2ε of their row's minimum for that phase's ε, far above the last one.
    Kept within the last phase's 2ε (sap_points._searched_tail's rule), the other rows searched, the
    answer is optimal and every pair within the certificate's tolerance; kept within the stopped
    phase's 2ε, pairs end thousands of last ε's from tight."""
    from lapcli.problem import prepare

    n = 150
    cost = distance_matrix(rng.random((n, 2)), rng.random((n, 2)), "sqeuclidean")
    work = prepare(cost).work_on(np)
    final_eps = work.eps / 8
    stopped_eps = final_eps * 8**4  # the auction's state four phases before its last
    col_of_row, v, _ = auction_twin(work.values, stopped_eps, scaling=8, max_bids=1_000_000)
    largest_pair = []
    for slack in (2 * final_eps, 2 * stopped_eps):
        v_start, col_start, searched = hand_over(work.values, col_of_row, v, slack=slack)
        columns, u, v_end, _ = reference_stack(searched[None], warm_start=(v_start[None], col_start[None]))
        reduced = work.values - u[0][:, None] - v_end[0][None, :]
        assert reduced.min() >= -final_eps / 100
        assert cost[np.arange(n), columns[0]].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
        largest_pair.append(reduced[np.arange(n), columns[0]].max())
        if slack == 2 * final_eps:
            assert 0 < int((col_start < 0).sum()) < n  # some rows kept, the others searched
    assert largest_pair[0] <= 2 * final_eps < 8 * final_eps < largest_pair[1]


def test_which_dense_squares_the_scaled_auction_starts():
    """Floats from AUCTION_FROM columns; integers while n·max|c| leaves float64 room for ε = 1/(4n)."""
    from lapcli.cuda.auction import AUCTION_INTEGER_SPAN
    from lapcli.engines.cuda.sap_start import uses_scaled_auction
    from lapcli.work import WorkMatrix

    def work(n, top, dtype):
        values = np.zeros((n, n), dtype=dtype)
        values[0, 0] = top
        return WorkMatrix(values, 0.0 if np.dtype(dtype).kind in "iu" else 1e-9)

    assert uses_scaled_auction(work(auction.AUCTION_FROM, 1.0, np.float64))
    assert not uses_scaled_auction(work(auction.AUCTION_FROM - 1, 1.0, np.float32))
    assert uses_scaled_auction(work(3000, 10**6, np.int32))
    assert uses_scaled_auction(work(3000, AUCTION_INTEGER_SPAN // 3000 - 1, np.int64))
    assert not uses_scaled_auction(work(3000, AUCTION_INTEGER_SPAN // 3000 + 1, np.int64))
    assert not uses_scaled_auction(work(1, 5, np.int32))


def test_a_coarse_phase_ends_only_on_a_stalled_tail_of_its_own_few_rows():
    """lapcli.cuda.auction.round_ends_phase for COARSE_FIRST's phase: the tail rule at
    min(tail_rows, COARSE_TAIL_ROWS) rows, stalled, ends it (its rows bid on in the next phase);
    a war never does, nor defers; with no tail (tail_rows 0: no searches) it bids to the end."""
    rules = dict(tail_rows=256, stalled_tail=True, defer_wars=True, last_tail_to_searches=True)
    few = auction.COARSE_TAIL_ROWS
    assert auction.round_ends_phase(few, few, False, coarse=True, **rules) == (True, False)
    assert auction.round_ends_phase(few, few + 1, False, coarse=True, **rules) == (False, False)  # rows get through
    assert auction.round_ends_phase(few + 1, few + 1, False, coarse=True, **rules) == (False, False)
    assert auction.round_ends_phase(few + 1, few + 1, False, **rules) == (True, False)  # a plain phase's tail
    assert auction.round_ends_phase(300, 200, False, coarse=True, **rules) == (False, False)
    assert auction.round_ends_phase(300, 200, False, **rules) == (True, True)  # a plain phase's war
    assert auction.round_ends_phase(1, 1, False, coarse=True, **{**rules, "tail_rows": 0}) == (False, False)


def test_a_coarse_first_phase_bids_a_regions_surplus_out_before_the_wars(rng):
    """``coarse_first`` (lapcli.cuda.auction.COARSE_FIRST, which the engine and the twin share): the
    first phase at COARSE_FIRST times the first ε bids in chains of COARSE_CHAIN until its tail rule
    (at most COARSE_TAIL_ROWS rows, stalled) ends it; no war rule does; the later phases meet fewer
    price wars. Two clusters, three quarters of the rows in the one that holds a quarter of the
    columns (the war rule's test, chains of 2, a tail of 2): fewer rows are left to the searches,
    and the answer is still exact."""
    from lapcli.engines.cuda.sap_start import AUCTION_SCALING

    n, crowded = 200, 150
    a = np.concatenate([rng.normal(0.0, 0.03, (crowded, 2)), rng.normal(1.0, 0.03, (n - crowded, 2))])
    b = np.concatenate([rng.normal(0.0, 0.03, (n - crowded, 2)), rng.normal(1.0, 0.03, (crowded, 2))])
    cost = np.round(distance_matrix(a, b, "sqeuclidean") * 1e6).astype(np.int64)
    optimum = cost[scipy_lsa(cost)].sum()
    rules = dict(scaling=AUCTION_SCALING, max_bids=300_000, max_chain=2, tail_rows=2, last_tail_to_searches=True,
                 stalled_tail=True, defer_wars=True)
    plain_cols, plain_v, plain = auction_twin(cost.astype(np.float64), 0.25 / n, **rules)
    col_of_row, v, phases = auction_twin(cost.astype(np.float64), 0.25 / n, coarse_first=auction.COARSE_FIRST,
                                         **rules)
    assert phases[0][0] == pytest.approx(plain[0][0] * auction.COARSE_FIRST)
    assert phases[0][3] <= 2 and phases[0][6] == 0  # at most the tail's rows left free, none deferred
    columns, searched = searched_from(cost, col_of_row, v)
    assert cost[np.arange(n), columns].sum() == optimum
    assert searched < searched_from(cost, plain_cols, plain_v)[1]


def sample_duals(a, b, metric, every):
    """lapcli.engines.cuda.sap_warm's start in NumPy: every ``every``-th point of each set along
    Morton's curve (lapcli.twins.tiles.spatial_order), the sample's row duals (lapcli.solve), and
    their c-transform over all columns, v[j] = min over sampled rows of c − u."""
    import lapcli
    from lapcli.twins.tiles import spatial_order

    rows, columns = a[spatial_order(a)[::every]], b[spatial_order(b)[::every]]
    u = lapcli.solve(distance_matrix(rows, columns, metric)).duals[0]
    return (distance_matrix(rows, b, metric) - u[:, None]).min(axis=0)


def test_the_auction_from_a_sample_s_duals_is_exact_and_bids_less(rng):
    """The point auction's warm start (``v_start``, lapcli.engines.cuda.sap_warm): from the
    c-transform of a stratified sample's duals the coarse-first auction on two clusters whose
    surplus must cross bids less than from v = 0, and the answer is the optimum; from any start,
    random duals included, it is still the optimum."""
    from lapcli.engines.cuda.sap_start import AUCTION_SCALING

    n, crowded = 200, 150
    a = np.concatenate([rng.normal(0.0, 0.03, (crowded, 2)), rng.normal(1.0, 0.03, (n - crowded, 2))])
    b = np.concatenate([rng.normal(0.0, 0.03, (n - crowded, 2)), rng.normal(1.0, 0.03, (crowded, 2))])
    scale = 1e6
    cost = np.round(distance_matrix(a, b, "sqeuclidean") * scale).astype(np.int64)
    optimum = cost[scipy_lsa(cost)].sum()
    rules = dict(scaling=AUCTION_SCALING, max_bids=300_000, max_chain=2, tail_rows=2, last_tail_to_searches=True,
                 stalled_tail=True, defer_wars=True, coarse_first=auction.COARSE_FIRST)
    warm = np.round(sample_duals(a, b, "sqeuclidean", 4) * scale)
    bids = {}
    for name, v_start in (("cold", None), ("warm", warm), ("random", rng.normal(0.0, 0.5 * scale, n))):
        col_of_row, v, phases = auction_twin(cost.astype(np.float64), 0.25 / n, v_start=v_start, **rules)
        columns, _ = searched_from(cost, col_of_row, v)
        assert cost[np.arange(n), columns].sum() == optimum, name
        bids[name] = sum(phase[2] for phase in phases)
    assert bids["warm"] < bids["cold"] / 2


def test_the_warm_start_takes_squares_from_warm_from_with_morton_codes():
    """sap_warm.warms: squares of WARM_FROM to WARM_UP_TO points whose columns have Morton codes
    (2-D to MAX_DIM-D, not cosine: auction_tiles.tiled); rectangles, smaller and larger squares and
    the others start from v = 0."""
    from lapcli.cuda.auction_tiles import MAX_DIM
    from lapcli.engines.cuda import sap_warm

    points = fake_points
    n = sap_warm.WARM_FROM
    assert sap_warm.warms(points(n, n)) and sap_warm.warms(points(2 * n, 2 * n, "cityblock", MAX_DIM))
    assert not sap_warm.warms(points(n - 1, n - 1)) and not sap_warm.warms(points(n, n + 1))
    assert not sap_warm.warms(points(n, n, "cosine")) and not sap_warm.warms(points(n, n, dim=MAX_DIM + 1))
    top = sap_warm.WARM_UP_TO
    assert sap_warm.warms(points(top, top)) and not sap_warm.warms(points(top + 1, top + 1))


def test_the_warm_start_s_sample_is_every_16th_point_and_at_most_sample_most():
    """sap_warm.stride: every SAMPLE_EVERY-th point up to SAMPLE_EVERY * SAMPLE_MOST points, then
    the stride that keeps the sample at SAMPLE_MOST points or fewer."""
    from lapcli.engines.cuda import sap_warm

    every, most = sap_warm.SAMPLE_EVERY, sap_warm.SAMPLE_MOST
    assert [sap_warm.stride(n) for n in (1000, sap_warm.WARM_FROM, every * most)] == [every] * 3
    assert sap_warm.stride(every * most + 1) == every + 1 and sap_warm.stride(4 * every * most) == 4 * every
    for n in (every * most + 1, 200_000, 262_144, 1 << 20, 3_000_017):
        assert -(-n // sap_warm.stride(n)) <= most < -(-n // (sap_warm.stride(n) - 1))


def test_the_coarse_phase_runs_above_65536_points_only_with_the_warm_start(monkeypatch):
    """sap_points.coarse_factor: the coarse first phase up to COARSE_FIRST_UP_TO points whatever
    the start, at auction.COARSE_FIRST times the first ε; above it only from a warm start
    (sap_warm.warms, to WARM_UP_TO points, and a sample solve handed in), its factor in proportion
    to n on 2-D sqeuclidean points whose sample moves points far (256 at 1,048,576;
    sap_points.COARSE_GROWS_FROM, not COARSE_FIRST_UP_TO, sets where it grows); past that neither."""
    from lapcli.engines.cuda import sap_points, sap_warm

    def points(n, metric="sqeuclidean", dim=2):
        return fake_points(n, metric=metric, dim=dim)

    far = sap_warm.WarmStart(None, 0, 2 * sap_warm.FAR_REACH)
    near = sap_warm.WarmStart(None, 0, sap_warm.FAR_REACH)  # (not above it)
    small, large = sap_points.COARSE_FIRST_UP_TO, sap_warm.WARM_UP_TO
    coarse, grows = auction.COARSE_FIRST, sap_points.COARSE_GROWS_FROM
    assert sap_warm.warms(points(small)) and sap_warm.warms(points(large)) and not sap_warm.warms(points(large + 1))
    assert not sap_warm.warms(points(small, "cosine")) and not sap_warm.warms(points(sap_warm.WARM_FROM - 1))
    for n in (1024, small):
        assert sap_points.coarse_factor(points(n), None) == coarse == sap_points.coarse_factor(points(n), far)
    assert sap_points.coarse_factor(points(small + 1), far) == pytest.approx(coarse * (small + 1) / grows)
    assert sap_points.coarse_factor(points(large), far) == coarse * large / grows
    assert sap_points.coarse_factor(points(small + 1), None) == 0.0
    for start in (near, sap_warm.WarmStart(None, 0, 0.0)):  # a uniform set's sample: no surplus to carry
        assert sap_points.coarse_factor(points(large), start) == coarse
    assert sap_points.coarse_factor(points(large), sap_warm.WarmStart(None, 0, np.inf)) == coarse * large / grows
    for unmeasured in (points(large, "cityblock"), points(large, "euclidean"), points(large, dim=3)):
        assert sap_points.coarse_factor(unmeasured, far) == coarse  # the factor grows on 2-D sqeuclidean
    monkeypatch.setattr(sap_points, "COARSE_FIRST_UP_TO", 0)  # benchmarks/point_sets.py --coarse-up-to 0
    assert sap_points.coarse_factor(points(large), far) == coarse * large / grows
    assert sap_points.coarse_factor(points(1024), None) == 0.0
    spread = 1e-3  # the auction's first ε takes the factor as it is (0: none)
    assert auction.first_eps_of(spread, 0.0, coarse * large / grows) == spread * auction.FIRST_EPS_OF_SPREAD * 256
    assert auction.first_eps_of(spread, 0.0, 0.0) == spread * auction.FIRST_EPS_OF_SPREAD


def test_the_point_auctions_chains_end_after_n_over_16_bids_at_least_4096():
    """sap_points.points_chain_limit: MIN_CHAIN bids up to 65,536 points, n / 16 above (16,384 at
    262,144 and 65,536 at 1,048,576 points, where n²/2²⁰ made uniform sets take twice as long on
    an H200; docs/points.md)."""
    from lapcli.engines.cuda import sap_points

    for n in (1024, 8192, 65_536):
        assert sap_points.points_chain_limit(n) == sap_points.MIN_CHAIN == 4096
    limits = [sap_points.points_chain_limit(n) for n in (65_537, 131_072, 262_144, 1 << 20)]
    assert limits == [4096, 8192, 16_384, 65_536]
    assert sap_points.points_chain_limit(3_000_017) == 3_000_017 // 16


def test_the_point_auctions_budget_is_the_dense_squares_then_grows_as_n_to_the_1_5():
    """sap_points.points_budget: sap_start.auction_budget up to BUDGET_GROWS_FROM points (1e-4 s a
    point, at least 0.5 s), then n^1.5: 419 s at 1,048,576 points, where the dense squares' 105 s
    stopped a clustered set's auction in its fourth phase (docs/points.md)."""
    from lapcli.engines.cuda import sap_points, sap_start

    grows = sap_points.BUDGET_GROWS_FROM
    for n in (1500, 16_384, grows):
        assert sap_points.points_budget(n) == sap_start.auction_budget(n)
    assert sap_points.points_budget(4 * grows) == pytest.approx(2 * sap_start.auction_budget(4 * grows))
    assert sap_points.points_budget(1 << 20) == pytest.approx(419.43, abs=0.01)


def test_the_searches_time_limit_error_says_how_far_they_got_and_where_the_auction_stopped():
    """sap_points.searches_timed_out: one line with the rows searched of those handed to the
    searches, the auction's last eps, and whether its budget stopped it."""
    from types import SimpleNamespace

    from lapcli.engines.cuda.sap_points import searches_timed_out

    budget = searches_timed_out(12, 231_004, SimpleNamespace(eps=5.74e-4, budget_spent=True))
    assert budget == ("the exact searches ran past the time limit: 12 of the 231,004 rows handed to them were "
                      "searched (the auction at eps 0.000574, its time budget stopped it)")
    last = searches_timed_out(0, 7, SimpleNamespace(eps=7.14e-11, budget_spent=False))
    assert last.endswith("0 of the 7 rows handed to them were searched (the auction at eps 7.14e-11, after its "
                         "last phase)") and "\n" not in last


def test_a_search_s_time_limit_takes_its_caller_s_message_and_other_statuses_keep_theirs():
    """lapcli.cuda.sap_cluster.ClusterResult.checked_stats: on SAP_TIMEOUT the caller's
    ``timed_out(stats)`` is the error (sap_points' searches say how far they got), without it the
    kernel's own message; another status keeps its message whatever the caller gives; SAP_OK
    returns the stats by name."""
    from types import SimpleNamespace

    from lapcli.cuda import sap_cluster, sap_rounds
    from lapcli.errors import SolverError

    def result(status):
        stats = SimpleNamespace(get=lambda: np.array([status, 3, 40, 900, 12345]))
        return sap_cluster.ClusterResult(None, None, stats, (), 0.0, sap_rounds.STATS)

    timeout, no_column = sap_cluster.STATUSES["SAP_TIMEOUT"], sap_cluster.STATUSES["SAP_NO_COLUMN"]
    with pytest.raises(SolverError, match=r"^3 searches, 40 rounds$"):
        result(timeout).checked_stats(timed_out=lambda stats: f"{stats['searches']} searches, {stats['rounds']} rounds")
    with pytest.raises(SolverError, match=r"^the shortest-path kernel ran past its time limit$"):
        result(timeout).checked_stats()
    with pytest.raises(SolverError, match="no feasible assignment"):
        result(no_column).checked_stats(timed_out=lambda stats: "not this")
    assert result(0).checked_stats(timed_out=lambda stats: "not this") == dict(
        status=0, searches=3, rounds=40, rows=900, ns=12345)
