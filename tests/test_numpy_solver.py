"""The NumPy Hungarian (the kernel's specification) against scipy, and its step accounting."""

import numpy as np
import pytest

import lapcli
from lapcli.errors import SolverError
from lapcli.engines.cpu.numpy_hungarian import step2_star_zeros, step5_augment, step6_shift_duals

from .helpers import RANGES, assert_matches_scipy, uniform_costs

SIZES = [1, 2, 3, 5, 8, 13, 31, 64, 97, 128, 211, 256, 300]


@pytest.mark.parametrize("range_factor", RANGES)
def test_integer_matrices_match_scipy(rng, range_factor):
    for n in SIZES:
        cost = uniform_costs(rng, n, n, range_factor)
        assert_matches_scipy(lapcli.solve(cost, solver="numpy"), cost)


def test_float_matrices_match_scipy(rng):
    for n in SIZES:
        cost = rng.random((n, n)) * rng.choice([1e-3, 1, 1e6])
        assert_matches_scipy(lapcli.solve(cost, solver="numpy"), cost)


def test_special_matrices_match_scipy(rng):
    n = 120
    specials = {
        "constant": np.full((n, n), 3),
        "diagonal zero": np.where(np.eye(n, dtype=bool), 0, rng.integers(1, 50, (n, n))),
        "ties": rng.integers(0, 2, (n, n)),
        "negative": rng.integers(-1000, 1000, (n, n)),
        "near 2^31": rng.integers(2**31 - 100, 2**31 - 1, (n, n)),
        "near -2^31": rng.integers(-(2**31), -(2**31) + 100, (n, n)),
        "float ties": rng.integers(0, 3, (n, n)) * 0.5,
    }
    for name, cost in specials.items():
        solution = lapcli.solve(cost, solver="numpy")
        assert_matches_scipy(solution, cost), name


def test_no_step6_when_reduced_matrix_has_a_perfect_zero_matching(rng):
    permutation = rng.permutation(80)
    cost = rng.integers(1, 100, (80, 80))
    cost[np.arange(80), permutation] = 0
    steps = {s.step: s.count for s in lapcli.solve(cost, solver="numpy").report.steps}
    assert steps[6] == 0
    assert steps[1] == 1


def test_step6_iterations_grow_with_the_range(rng):
    def step6_count(range_factor):
        cost = uniform_costs(rng, 200, 200, range_factor)
        return {s.step: s.count for s in lapcli.solve(cost, solver="numpy").report.steps}[6]

    assert step6_count(0.01) < step6_count(1) < step6_count(1000)


def test_report_lists_six_timed_steps(rng):
    report = lapcli.solve(uniform_costs(rng, 50, 50, 100), solver="numpy").report
    assert [s.step for s in report.steps] == [1, 2, 3, 4, 5, 6]
    assert all(s.ms >= 0 and s.count >= 0 for s in report.steps)
    assert report.steps[2].count == report.steps[4].count + 1  # every augmentation is followed by step 3


def test_step6_refuses_a_non_positive_delta():
    # An uncovered zero missing from the zero list would make Δ = 0 and loop forever: it raises.
    cost = np.array([[0, 5], [5, 0]], dtype=np.int64)
    u, v = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    no_cover = np.zeros(2, dtype=bool)
    empty = np.empty(0, dtype=np.int64)
    with pytest.raises(SolverError, match="Δ"):
        step6_shift_duals(cost, u, v, no_cover, no_cover, empty, empty, 0.0)


def test_step2_rows_take_their_first_free_column_from_their_own_and_columns_their_smallest_row():
    # the kernel's rule (step2_pick / step2_star), independent of the zero list's order
    zeros = [(2, 1), (0, 3), (0, 1), (1, 1), (1, 0), (3, 3)]
    for order in (zeros, zeros[::-1]):
        rows, cols = (np.array(a) for a in zip(*order))
        star_col, star_row = np.full(4, -1), np.full(4, -1)
        passes = step2_star_zeros(rows, cols, star_col, star_row)
        # pass 1: rows pick (j - i) mod 4 least: 1 (of 3, 1), 1 (of 1, 0), 1, 3 -> column 1 stars
        # row 0, 3 stars 3; pass 2: row 1 takes column 0, row 2's only zero is starred; pass 3 finds none
        assert star_col.tolist() == [1, 0, -1, 3] and passes == 3


def test_step2_stars_a_matrix_of_zeros_in_one_pass():
    """Row i takes column i: with the smallest column every row picked column 0 and a pass starred
    one row (1,023 passes at n = 1,024, the papers' R = 0.001, whose costs are all 0)."""
    rows, cols = (a.ravel() for a in np.indices((64, 64)))
    star_col, star_row = np.full(64, -1), np.full(64, -1)
    assert step2_star_zeros(rows, cols, star_col, star_row) == 2 and star_col.tolist() == list(range(64))


def test_step5_green_of_a_column_is_its_largest_visiting_row():
    # rows 0 and 2 have no star; row 0 is primed in column 0, whose star row 3 is primed in
    # column 2; row 2 is primed in column 2 too. Both walks reach column 2 (no star: a path end),
    # the one from row 0 through row 3, which is the larger row and so column 2's green.
    star_col, star_row = np.array([-1, 1, -1, 0]), np.array([3, 1, -1, -1])
    prime = np.array([0, -1, 2, 2])
    step5_augment(prime, star_col, star_row)
    # flipped: row 3 -> column 2, row 0 -> column 0; row 2 stays without a star
    assert star_col.tolist() == [0, 1, -1, 2] and star_row.tolist() == [0, 1, 3, -1]


# ------------------------------------------------------------------ the auction start
def _work(cost, maximize=False):
    from lapcli.problem import prepare

    work = prepare(cost, maximize=maximize).work_on(np)
    return work.values, work.eps


def _certify(values, eps, cols, u, v):
    reduced = values.astype(np.float64) - u[:, None] - v[None, :]
    assert reduced.min() >= -max(eps, 0) * 4, reduced.min()
    assert np.abs(reduced[np.arange(len(cols)), cols]).max() <= max(eps, 0) * 4
    assert np.unique(cols).size == len(cols)


@pytest.mark.parametrize("rounds", [1, 5, 100])
def test_the_auction_start_gives_optimal_certified_answers(rng, rounds):
    from scipy.optimize import linear_sum_assignment

    from lapcli.engines.cpu.numpy_hungarian import solve_square
    from lapcli.steps import StepRecorder

    cases = [uniform_costs(rng, n, n, r) for n in (1, 2, 7, 64) for r in RANGES]
    cases += [rng.random((50, 50)), np.zeros((9, 9)), np.full((6, 6), 3.5), rng.random((20, 20)) * 1e9]
    cases += [(rng.random((30, 30)) * 4).round(), -uniform_costs(rng, 40, 40, 10)]
    with_forbidden = rng.random((25, 25))
    with_forbidden[rng.random((25, 25)) < 0.3] = np.inf
    with_forbidden[np.arange(25), np.arange(25)] = 1.0  # keeps it feasible
    for cost, maximize in [(c, False) for c in cases] + [(cases[-3], True), (with_forbidden, False)]:
        values, eps = _work(cost, maximize)
        cols, u, v = solve_square(values, eps, StepRecorder(), auction_rounds=rounds)
        _certify(values, eps, cols, u, v)
        finite = np.where(np.isfinite(cost), cost, 0.0)
        rows, expected = linear_sum_assignment(cost, maximize=maximize)
        assert np.isclose(finite[rows, cols].sum(), finite[rows, expected].sum(), rtol=1e-12, atol=1e-9)


def test_every_auction_round_keeps_the_duals_feasible_and_the_stars_tight(rng):
    from lapcli.engines.cpu.numpy_hungarian import auction_start

    for cost in (uniform_costs(rng, 80, 80, 1000).astype(np.int64), rng.random((60, 60)), np.zeros((5, 5))):
        previous_stars = -1
        for rounds in (0, 1, 2, 10, 1000):
            u, v, column_of_star_at_row, row_of_star_at_column, ran = auction_start(cost, rounds)
            assert ran <= rounds
            reduced = cost - u[:, None] - v[None, :]
            assert reduced.min() >= -1e-12
            starred = np.flatnonzero(column_of_star_at_row >= 0)
            assert np.abs(reduced[starred, column_of_star_at_row[starred]]).max(initial=0) <= 1e-12
            assert np.array_equal(row_of_star_at_column[column_of_star_at_row[starred]], starred)
            assert starred.size >= previous_stars  # a round stars every column bid for: never fewer stars
            previous_stars = starred.size
        if np.ptp(cost) > 0:  # (all-equal costs stall on ties: step 2 stars those)
            assert starred.size >= 0.9 * cost.shape[0]  # enough rounds star almost every row


def test_the_auction_start_cuts_the_dual_updates_at_high_ranges(rng):
    """The point of the start: ~10× fewer step-6 updates at R = 1000 (docs/benchmarks.md)."""
    from lapcli.engines.cpu.numpy_hungarian import solve_square
    from lapcli.steps import StepRecorder

    cost = uniform_costs(rng, 256, 256, 1000).astype(np.int64)
    plain, auction = StepRecorder(), StepRecorder()
    solve_square(cost, 0, plain)
    solve_square(cost, 0, auction, auction_rounds=100)
    assert auction.counts[6] * 5 <= plain.counts[6], (auction.counts, plain.counts)
    assert auction.counts[4] * 5 <= plain.counts[4], (auction.counts, plain.counts)


def test_the_auction_stops_when_ties_only_pass_columns_around(rng):
    """The stopping rule the kernel shares: ``patience`` rounds without fewer free rows end it."""
    from lapcli.engines.cpu.numpy_hungarian import auction_start

    cost = np.zeros((40, 40), dtype=np.int64)  # every bid 0: a column passes between its bidders
    *_, column_of_star_at_row, _, ran = auction_start(cost, rounds=1000, patience=5)
    assert ran <= 1 + 5 + 1 and (column_of_star_at_row >= 0).sum() < 40
    cost = uniform_costs(rng, 200, 200, 1000).astype(np.int64)
    assert auction_start(cost, rounds=1000, patience=5)[4] < auction_start(cost, rounds=1000, patience=50)[4]


def test_the_numpy_engine_starts_with_the_auction_as_the_kernel_does(rng):
    from lapcli.engines.cpu import numpy as numpy_engine
    from lapcli.problem import prepare

    cost = uniform_costs(rng, 128, 128, 1000)
    auction = {s.step: s.count for s in numpy_engine.run(prepare(cost)).steps}
    classical = {s.step: s.count for s in numpy_engine.solve(prepare(cost), auction_rounds=0).steps}
    assert auction[6] * 3 <= classical[6], (auction, classical)
