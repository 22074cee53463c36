"""No silent wrong answer. Every answer of an engine with duals is proved optimal by
complementary slackness, the duals come back in the caller's coordinates, and the float tolerance
follows the spread of the costs, not their magnitude."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.certificate import certify
from lapcli.errors import SolverError
from lapcli.problem import objective_tolerance, prepare

from .helpers import assert_matches_scipy


def scipy_objective(cost, maximize=False):
    rows, cols = scipy_lsa(cost, maximize=maximize)
    values = cost[rows, cols]
    return math.fsum(values.tolist()) if cost.dtype.kind == "f" else int(values.astype(object).sum())


def test_offset_floats_are_solved_to_the_optimum(rng):
    # 1e6 + U(0, 1e-7): the old magnitude-scaled tolerance (0.1 here) accepted any permutation
    cost = 1e6 + rng.uniform(0, 1e-7, (100, 100))
    solution = lapcli.solve(cost, solver="numpy")
    optimum = scipy_objective(cost)
    random_permutation = math.fsum(cost[np.arange(100), rng.permutation(100)].tolist())
    tolerance = objective_tolerance(cost)
    assert abs(solution.objective - optimum) <= tolerance
    # the tolerance must be able to tell the optimum from a random assignment
    assert tolerance < 2e-2 * (random_permutation - optimum)  # was 0.1: 20,000× the gap
    assert solution.report.certified


@pytest.mark.parametrize("solver", ["auto", "scipy", "lapx"])
def test_offset_floats_through_the_float64_engines_are_optimal_and_certified(rng, solver):
    """1e6 + K·2^-33 with integers K (2^-33 is an ulp of 1e6, so every cost is exact and the
    optimum is K's): scipy and lapx, given such a matrix as it is, computed at the scale of 1e6 and
    came back an ulp or two off the optimum, which the certificate (whose tolerance follows the
    spread) refused as an engine bug (``auto``: SolverError on valid input, 1.7 % of such draws).
    They solve the row-reduced work matrix instead: the optimum, certified."""
    if solver == "lapx" and not lapcli.engines.registry.get("lapx").available()[0]:
        pytest.skip("lapx is not installed")
    failing = np.array([[920, 96, 25, 428], [265, 386, 384, 662], [259, 381, 307, 841]])
    draws = [failing] + [rng.integers(0, 1000, shape) for shape in ((6, 6), (5, 9), (9, 5), (30, 30)) for _ in range(15)]
    for grid in draws:
        for maximize in (False, True):
            solution = lapcli.solve(1e6 + grid * 2.0**-33, solver=solver, maximize=maximize)
            assert solution.report.certified
            chosen = int(grid[solution.row_ind, solution.col_ind].sum())
            assert chosen == int(scipy_objective(grid, maximize)), (grid.tolist(), maximize)


def test_float64_costs_rounded_to_an_asked_float32_say_so(rng):
    """dtype="float32" on float64 costs float32 cannot hold: the answer is the rounded costs'
    optimum (here the diagonal, 1e-9 worse than the given costs' optimum) and its certificate
    proves that, so the report says so; costs float32 holds get no such note."""
    cost = np.array([[1 + 1e-9, 1.0], [1.0, 1 + 1e-9]])
    for solution in (lapcli.solve(cost, dtype="float32", solver="numpy"), lapcli.solve_batch(cost[None], dtype="float32")):
        assert any("rounded to float32" in note for note in solution.report.notes)
    assert lapcli.solve(cost, dtype="float32", solver="numpy").objective == math.fsum(cost.diagonal())
    from lapcli.engines import registry

    for solver in ("scipy", "lapx") if registry.get("lapx").available()[0] else ("scipy",):  # lapx said float64
        solution = lapcli.solve(cost, dtype="float32", solver=solver)
        assert solution.report.dtype == "float32" and any("rounded to float32" in note for note in solution.report.notes)
    exact = rng.integers(0, 100, (5, 5)) / 4.0
    assert not any("rounded" in note for note in lapcli.solve(exact, dtype="float32").report.notes)


def test_near_ties_below_the_integer_grid_are_resolved_exactly(rng):
    # integers 0..9 (many ties) broken by perturbations of 1e-8: the tolerance (≈ k·10·2^-50)
    # must stay far below 1e-8. The bound below is the certificate's 2·k·eps with an eps 2^10
    # looser than ours, independent of problem.py: loosening eps 2^20-fold fails it (checked).
    n = 150
    for _ in range(3):
        cost = rng.integers(0, 10, (n, n)) + 1e-8 * rng.random((n, n))
        solution = lapcli.solve(cost, solver="numpy")
        optimum = scipy_objective(cost)
        assert abs(solution.objective - optimum) <= 2 * n * 10 * 2.0**-40


def test_objective_tolerance_of_a_tall_matrix_follows_its_transposed_work_matrix(rng):
    """A tall k × 1 problem is solved as its 1 × k transpose: the solver reduces that row, whose
    spread is the spread of the column (found by the GPU fuzzer: a 1635 × 1 near-tie case whose
    tolerance was computed from rows of one entry each, spread 0, while the certificate rightly
    used the column's spread)."""
    column = rng.integers(0, 10, (300, 1)) + 1e-8 * rng.random((300, 1))
    assert objective_tolerance(column) == objective_tolerance(column.T) > 0
    wide = rng.random((3, 40))
    assert objective_tolerance(wide.T) == objective_tolerance(wide)


def test_the_float_tolerance_follows_the_spread_not_the_magnitude(rng):
    small = rng.random((64, 64))
    assert prepare(small + 1e9).eps == pytest.approx(prepare(small).eps, rel=1e-3)
    assert prepare(small * 1e9).eps == pytest.approx(prepare(small).eps * 1e9, rel=1e-6)


@pytest.mark.parametrize("shape", [(7, 7), (5, 9), (9, 5), (1, 6), (6, 1)])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("kind", ["int", "float", "forbidden"])
def test_duals_prove_optimality_in_the_callers_coordinates(rng, shape, maximize, kind):
    cost = rng.integers(-50, 50, shape) if kind == "int" else rng.random(shape) * 100 + 1e4
    if kind == "forbidden":
        cost[rng.random(shape) < 0.2] = -np.inf if maximize else np.inf
        cost[np.arange(min(shape)), np.arange(min(shape))] = 1.0  # keep it feasible
    solution = lapcli.solve(cost, solver="numpy", maximize=maximize)
    assert_matches_scipy(solution, cost, maximize)
    assert solution.report.certified
    u, v = solution.duals
    assert u.shape == (shape[0],) and v.shape == (shape[1],)
    slack = cost - u[:, None] - v[None, :]
    sign = -1 if maximize else 1
    tolerance = 1e-6 * (1 + np.abs(cost[np.isfinite(cost)]).max())
    finite = np.isfinite(cost)
    assert (sign * slack[finite] >= -tolerance).all()
    assert np.abs(slack[solution.row_ind, solution.col_ind]).max() <= tolerance
    if kind == "int":
        assert u.dtype == np.int64 and v.dtype == np.int64
    # the larger side's duals in the rectangular form: on the free points' side of 0, 0 where free
    # (a padded square's free columns once kept the padding's dual, a proof only of the square)
    if shape[0] != shape[1]:
        larger, taken = (v, solution.col_ind) if shape[1] > shape[0] else (u, solution.row_ind)
        free = np.setdiff1d(np.arange(len(larger)), taken)
        assert (sign * larger <= tolerance).all() and np.abs(larger[free]).max(initial=0) <= tolerance
    assert float(u.sum() + v.sum()) == pytest.approx(float(solution.objective), abs=len(u) * tolerance)


def test_certify_rejects_infeasible_duals_and_loose_pairs():
    cost = np.array([[1, 2], [3, 1]])
    col = np.array([0, 1])
    assert certify(cost, col, np.array([1, 1]), np.array([0, 0]), 0.0, "test").certified
    with pytest.raises(SolverError, match="duals infeasible"):
        certify(cost, col, np.array([2, 1]), np.array([0, 0]), 0.0, "test")
    with pytest.raises(SolverError, match="not tight"):
        certify(cost, col, np.array([0, 1]), np.array([0, 0]), 0.0, "test")
    with pytest.raises(SolverError, match="free column"):  # rectangular: a free column needs v = 0
        certify(np.array([[1, 2, 0]]), np.array([0]), np.array([2]), np.array([-1, 0, -2]), 0.0, "test")
    with pytest.raises(SolverError, match="duals infeasible"):  # NaN duals fail, not pass (NaN < x is False)
        certify(cost.astype(float), col, np.array([np.nan, 1.0]), np.array([0.0, 0.0]), 1e-9, "test")


def test_a_wrong_engine_answer_raises_instead_of_returning(monkeypatch, rng):
    from lapcli.engines.cpu import numpy as numpy_engine

    real = numpy_engine.solve_square

    def broken(work, eps, recorder, **options):
        columns, u, v = real(work, eps, recorder, **options)
        return columns[::-1].copy(), u, v  # a permutation, but not the optimal one

    monkeypatch.setattr(numpy_engine, "solve_square", broken)
    cost = rng.integers(0, 1000, (30, 30))
    with pytest.raises(SolverError, match="certificate"):
        lapcli.solve(cost, solver="numpy")


def test_report_says_certified_and_how_long_it_took(rng):
    report = lapcli.solve(rng.random((20, 20)), solver="numpy").report
    assert report.certified and report.certificate["ms"] >= 0 and report.certificate["where"] == "host"
    assert report.certificate["tolerance"] > 0
    uncertified = lapcli.solve(rng.random((20, 20)), solver="scipy", certify=False).report
    assert not uncertified.certified and "no duals" in uncertified.certificate["why"]


@pytest.mark.parametrize("shape", [(30, 30), (20, 35), (35, 20)])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("kind", ["float", "int", "forbidden"])
def test_engines_without_duals_get_theirs_recovered_and_checked(rng, shape, maximize, kind):
    """scipy and lapx keep no duals: they are recovered from the answer (shortest paths on its
    residual graph, lapcli.duals) and proved like every engine's, in the caller's coordinates."""
    cost = rng.random(shape) if kind != "int" else rng.integers(-500, 500, shape)
    if kind == "forbidden":
        cost[rng.random(shape) < 0.2] = -np.inf if maximize else np.inf
    for solver in ("scipy", "lapx"):
        if solver == "lapx" and not lapcli.engines.registry.get("lapx").available()[0]:
            continue
        solution = lapcli.solve(cost, solver=solver, maximize=maximize)
        assert solution.report.certified and solution.report.certificate["duals_recovered_ms"] >= 0
        u, v = solution.duals
        finite = np.isfinite(cost.astype(float))
        reduced = np.where(finite, cost - u[:, None] - v[None, :], 0.0) * (-1 if maximize else 1)
        tol = 1e-9 * max(1.0, float(np.abs(cost[finite]).max()))
        assert reduced.min() >= -tol  # dual feasible (≤ 0 when maximising)
        assert np.abs(reduced[solution.row_ind, solution.col_ind]).max() <= tol  # tight on the pairs


def test_a_recovered_certificate_catches_a_wrong_answer(rng, monkeypatch):
    from lapcli.engines.cpu import scipy as scipy_engine

    cost = rng.random((12, 12))
    real = scipy_engine.scipy_lsa
    monkeypatch.setattr(scipy_engine, "scipy_lsa", lambda c, maximize=False: (np.arange(12), np.roll(real(c)[1], 1)))
    with pytest.raises(lapcli.SolverError, match="failed its optimality certificate"):
        lapcli.solve(cost, solver="scipy")


def test_x_and_y_are_lapjvs_views(rng):
    cost = rng.integers(0, 100, (4, 6))
    solution = lapcli.solve(cost, solver="numpy")
    assert solution.x.tolist() == solution.col_ind.tolist()
    assert all(solution.x[solution.y[j]] == j for j in range(6) if solution.y[j] >= 0)
    assert (solution.y == -1).sum() == 2
    tall = lapcli.solve(cost.T, solver="scipy")
    assert (tall.x == -1).sum() == 2 and tall.y.tolist() == tall.row_ind[np.argsort(tall.col_ind)].tolist()


def lapjv_reference(cost, limit):
    """lapjv's cost_limit, built independently: [[C, L/2], [L/2, 0]] solved by scipy."""
    n, m = cost.shape
    extended = np.full((n + m, n + m), limit / 2.0)
    extended[:n, :m] = cost
    extended[n:, m:] = 0
    rows, cols = scipy_lsa(extended)
    keep = (rows < n) & (cols < m)
    return rows[keep], cols[keep]


@pytest.mark.parametrize("solver", ["numpy", "scipy"])
def test_cost_limit_leaves_expensive_rows_unassigned_as_lapjv(rng, solver):
    solution = lapcli.solve(np.array([[1, 10], [10, 20]]), cost_limit=5, solver=solver)
    assert solution.x.tolist() == [0, -1] and solution.objective == 1
    for shape in ((6, 6), (5, 8), (8, 5)):
        cost = rng.integers(0, 100, shape)
        limit = float(rng.integers(20, 120))
        solution = lapcli.solve(cost, cost_limit=limit, solver=solver)
        rows, cols = lapjv_reference(cost, limit)

        def augmented_total(objective, assigned):  # the (n+m)² problem's cost: ties may differ in pairs
            return objective + limit / 2 * ((shape[0] - assigned) + (shape[1] - assigned))

        assert augmented_total(solution.objective, len(solution.row_ind)) == \
            augmented_total(int(cost[rows, cols].sum()), len(rows))
        assert (solution.x >= 0).sum() == len(solution.row_ind)


@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_whole_float_costs_solved_as_integers_take_any_cost_limit(rng, dtype):
    """Float costs that are whole numbers, solved as integers (dtype), put L/2 beside them: an odd or
    fractional limit was refused as "costs are not integers". They are augmented as integers."""
    for shape, limit in (((6, 6), 33), ((5, 8), 40.5), ((8, 5), 47)):
        cost = rng.integers(0, 100, shape).astype(np.float64)
        solution = lapcli.solve(cost, cost_limit=limit, dtype=dtype)
        rows, cols = lapjv_reference(cost, limit)
        pairs = len(solution.row_ind)
        assert solution.report.dtype == dtype and isinstance(solution.objective, float)
        assert solution.objective + limit / 2 * (sum(shape) - 2 * pairs) == \
            cost[rows, cols].sum() + limit / 2 * (sum(shape) - 2 * len(rows))
    with pytest.raises(ValueError, match="costs are not integers"):  # the costs', not the limit's
        lapcli.solve(cost + 0.5, cost_limit=33, dtype=dtype)
    # augmenting as integers doubles the spread: only where the float problem's L/2 is no integer, so
    # that int32 costs near 2^31 with a whole L/2 keep solving as float costs beside L/2
    wide = rng.integers(0, 1_500_000_000, (4, 4)).astype(np.float64)
    rows, cols = lapjv_reference(wide, 2e9)
    assert lapcli.solve(wide, cost_limit=2e9, dtype=dtype).objective == wide[rows, cols].sum()
    if dtype == "int32":  # an odd limit: the augmented problem's range, said to be that problem's
        with pytest.raises(ValueError, match=r"do not fit int32; .* \(under cost_limit, lapjv's augmented problem's"):
            lapcli.solve(wide, cost_limit=2_000_000_001, dtype=dtype)
        too_wide = wide.copy()
        too_wide[0, 0] = 3e9  # an even limit: augmented as floats, neither shifted nor doubled: the costs' own range
        with pytest.raises(ValueError, match=r"^costs lie in \[0, 3000000000\] and do not fit int32; ask for dtype int64 "
                                             r"or float64$"):
            lapcli.solve(too_wide, cost_limit=24, dtype=dtype)


def test_an_infinite_cost_limit_leaves_no_row_out_as_lapjvs_default(rng):
    cost = rng.integers(0, 100, (5, 7))
    limited, plain = lapcli.solve(cost, cost_limit=np.inf), lapcli.solve(cost)
    assert limited.objective == plain.objective and (limited.x >= 0).all()
    assert not any("cost_limit" in note for note in limited.report.notes)


def test_a_cost_limit_on_costs_without_a_pair_builds_no_augmented_problem(monkeypatch):
    """No row or no column: nothing to leave out, so no (n + m)² problem (0 × 20,000 took 27 s)."""
    from lapcli import cost_limit

    def augmented(*_):
        raise AssertionError("an augmented problem was built")

    monkeypatch.setattr(cost_limit, "augmented_matrix", augmented)
    for shape in ((0, 20000), (3, 0), (0, 0)):
        solution = lapcli.solve(np.zeros(shape), cost_limit=2.0)
        assert solution.objective == 0 and len(solution.row_ind) == 0 and (solution.x == -1).all()
        assert (solution.report.n_rows, solution.report.n_cols) == shape
    with pytest.raises(ValueError, match="cost_limit must be a finite number"):
        lapcli.solve(np.zeros((0, 5)), cost_limit=float("nan"))


@pytest.mark.parametrize("dtype", [None, "float32", "float64"])
def test_a_cost_limit_on_costs_all_forbidden_leaves_every_row_out(dtype):
    """No finite cost: the limit, unclamped, went into the work as L/2 (5e299 in float32 was refused
    as "costs overflow float32"); every limit leaves every row out, as lapjv does."""
    for limit in (1e300, 3.0, -2.0):
        solution = lapcli.solve(np.full((2, 1), np.inf, np.float32), cost_limit=limit, dtype=dtype)
        assert (solution.x == -1).all() and len(solution.row_ind) == 0 and solution.objective == 0


@pytest.mark.parametrize("solver", ["numpy", "scipy", "auto"])
def test_a_far_cost_limit_is_the_limit_of_the_costs(rng, solver):
    """A limit far above the costs made the augmented problem's tolerance follow L/2 (3 × 15 U[0, 1)
    under 1e20: 0.318 against the optimum's 0.201, "certified" within 8e5); above t + (min(n, m) + 1)·S
    every limit has the same answers, so the augmented matrix holds that instead."""
    for shape in ((3, 15), (15, 3), (40, 40)):
        cost = rng.random(shape)
        rows, cols = scipy_lsa(cost)
        for limit in (1e20, 1e300):
            solution = lapcli.solve(cost, cost_limit=limit, solver=solver)
            assert len(solution.row_ind) == min(shape)
            assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12)
    cost = 1e6 + rng.random((6, 9))  # far from zero: the least cost t shifts the ceiling
    cost[0, :] = np.inf  # a row no column takes: left out under any limit
    solution = lapcli.solve(cost, cost_limit=1e300, solver=solver)
    assert sorted(solution.row_ind.tolist()) == [1, 2, 3, 4, 5]
    assert solution.objective == pytest.approx(cost[1:][scipy_lsa(cost[1:])].sum(), rel=1e-13)


@pytest.mark.parametrize("solver", ["numpy", "scipy", "lapx", "auto"])
def test_a_cost_limit_above_every_cost_assigns_every_row_in_float32_work(rng, solver):
    """Every pair below the limit is taken, whatever the work rounds to: the ceiling that stands for
    a far limit kept a margin of 2^-40 of the costs (or float64's smallest normal), which float32 work
    rounded away where the costs are equal (3 × 3 sevens under cost_limit=8, or zeros, came back with
    rows left out, "certified"); and (k + 1)·S passed float32's range beside costs near its largest."""
    if solver == "lapx":
        pytest.importorskip("lap", reason="lapx is an optional peer")
    few_values = [np.full((3, 3), 7.0), np.array([[6.0]]), np.array([[4.0]], dtype=np.float16), np.full((2, 3), -3.0),
                  1e6 + rng.integers(0, 3, (9, 12)) * 2.0**-4, rng.choice([1.0, 1.0 + 7e-8], (40, 40)),
                  np.zeros((4, 4)), np.full((3, 3), 1e-40), np.array([[0.0, 3e38], [3e38, 0.0]])]
    for cost in few_values:
        top = float(cost.max())
        limit = 1e300 if top > 1e30 else top + 0.5 if top < 1e6 else top + 64  # 1e300: a limit whose stand-in fits
        solution = lapcli.solve(cost, cost_limit=limit, dtype="float32", solver=solver)
        assert (solution.x >= 0).sum() == min(cost.shape), (cost.shape, solution.x)
        best = cost.astype(np.float32).astype(np.float64)
        assert solution.objective == pytest.approx(best[scipy_lsa(best)].sum(), rel=1e-6)
    # zeros beside forbidden pairs: two rows take a pair (the margin's float64 smallest normal was 0 in float32)
    forbidden = np.array([[0.0, np.inf], [np.inf, 0.0], [0.0, 0.0]])
    assert (lapcli.solve(forbidden, cost_limit=1.0, dtype="float32", solver=solver).x >= 0).sum() == 2


def test_cost_limit_refuses_maximize_and_nan():
    with pytest.raises(ValueError, match="minimisation"):
        lapcli.solve(np.eye(3), cost_limit=1.0, maximize=True)
    with pytest.raises(ValueError, match="finite"):
        lapcli.solve(np.eye(3), cost_limit=float("nan"))
    with pytest.raises(ValueError, match="a number"):
        lapcli.solve(np.eye(3), cost_limit=True)
    with pytest.raises(ValueError, match="cost_limit must be a number, got '3'"):  # float() read words
        lapcli.solve(np.eye(3), cost_limit="3")
    with pytest.raises(ValueError, match="cost_limit must be a number, got array"):  # a 0-d array of text too
        lapcli.solve(np.eye(3), cost_limit=np.array("3"))
    torch = pytest.importorskip("torch", reason="torch is an optional peer")
    for scalar in (torch.tensor(3.0), torch.tensor(3), np.array(3.0)):  # numbers in one element still are
        assert lapcli.solve(np.array([[1.0, 5.0], [5.0, 1.0]]), cost_limit=scalar).x.tolist() == [0, 1]
    for one_element in (torch.tensor([3.0]), np.array([3.0])):  # an array of one is refused alike
        with pytest.raises(ValueError, match="cost_limit must be a number"):
            lapcli.solve(np.eye(3), cost_limit=one_element)


def best_limited(cost, limit):
    """lapjv's cost_limit by brute force in Python integers: the least Σ (c − L) over every
    matching, the empty one included."""
    import itertools

    n, m = cost.shape
    best = 0  # the empty matching's
    for size in range(1, min(n, m) + 1):
        for rows in itertools.combinations(range(n), size):
            for cols in itertools.permutations(range(m), size):
                best = min(best, sum(int(cost[i, j]) - limit for i, j in zip(rows, cols)))
    return best


def assert_limited_optimum(cost, limit):
    solution = lapcli.solve(cost, cost_limit=limit)
    pairs = list(zip(solution.row_ind.tolist(), solution.col_ind.tolist()))
    exact = Fraction(limit)  # a float limit's exact value: no rounding in the reference
    total = sum(int(cost[i, j]) - exact for i, j in pairs)
    assert total == best_limited(cost, exact), (cost.tolist(), limit)
    assert solution.objective == sum(int(cost[i, j]) for i, j in pairs)
    assert (solution.x >= 0).sum() == len(pairs)


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2)])
def test_cost_limit_is_exact_for_integers_near_the_ends_of_their_type(rng, dtype, shape):
    """Integer costs near ±2^63 (and past it, unsigned) under integral limits given as Python ints
    beyond 2^53, as floats beyond 2^63, far below and far above every cost, past float64's range:
    the solve equals the brute force in Python integers. Doubling the costs in int64, or a float64
    limit, rounded or wrapped these into wrong answers certified as optimal."""
    info = np.iinfo(dtype)
    for _ in range(6):
        base = int(rng.integers(info.max // 4, info.max // 2)) * int(rng.choice([-1, 1]) if dtype == np.int64 else 2)
        cost = np.array([[base + int(x) for x in row] for row in rng.integers(0, 50, shape)], dtype=dtype)
        for limit in (base + int(rng.integers(0, 120)), float(base + 2**12), base - 5, base + 10**6,
                      float(2**70), -(2**70), 10**400, -(10**400)):
            assert_limited_optimum(cost, limit)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint8])
def test_cost_limit_is_exact_across_the_whole_range_of_narrow_integers(rng, dtype):
    """Costs spanning a narrow type's whole range (int8's −128 to 127): their shift by the least
    cost is made in int64, where int8 would wrap (−128 − 127)."""
    info = np.iinfo(dtype)
    for _ in range(20):
        cost = rng.integers(int(info.min), int(info.max) + 1, (3, 3)).astype(dtype)
        cost[0, 0], cost[1, 1] = info.min, info.max
        for limit in (0, int(info.min), int(info.max), int(rng.integers(int(info.min), int(info.max)))):
            assert_limited_optimum(cost, limit)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2)])
def test_a_fractional_cost_limit_keeps_integers_exact(rng, shape):
    """A limit with a fractional part over integer costs: beside ±2^60, where float64 rounded the
    costs (cost_limit=0.5 took a pairing 1 worse, certified), and amid small costs, where a limit
    between two integers decides which matchings win."""
    for _ in range(8):
        base = int(rng.choice([-1, 1])) * 2**60
        wide = np.array([[base + int(x) for x in row] for row in rng.integers(0, 6, shape)], dtype=np.int64)
        for limit in (0.5, -0.5, 1.5, 2.0**51 + 0.5):  # 2^51 + 0.5: fractional in float64, far from the costs
            assert_limited_optimum(wide, limit)
        small = rng.integers(0, 40, shape)
        for limit in (0.5, 19.5, 20.25, 39.75, -3.5, 200.5):
            assert_limited_optimum(small, limit)


def test_a_fractional_cost_limit_too_wide_for_its_doubled_integers_says_so(rng):
    """Integers whose spread leaves exact room for an integral limit but not for the doubled
    costs of a fractional one: refused as too wide, naming the fraction, not only the spread."""
    from lapcli.errors import TooWideError

    spread = 2**62 // 72 - 2**50
    cost = rng.integers(0, spread, (4, 4))
    cost[0, 0], cost[1, 1] = 0, spread
    for limit in (0, 1):
        assert lapcli.solve(cost, cost_limit=limit).report.certified
    with pytest.raises(TooWideError, match="fractional part doubles the integers"):
        lapcli.solve(cost, cost_limit=0.5)


def test_cost_limit_refuses_integers_too_wide_to_solve_exactly():
    with pytest.raises(ValueError, match="too wide"):
        lapcli.solve(np.array([[2**63 - 5, 3], [3, 2**63 - 5]], dtype=np.int64), cost_limit=10)


def test_forbidden_entries_do_not_loosen_the_tolerance(rng):
    # found by the GPU fuzzer: the sentinel ((k+2)·spread) used to enter eps, k-fold looser, and
    # near-ties with forbidden entries came out up to 25× the optimum off
    n = 300
    for maximize in (False, True):
        cost = rng.integers(0, 10, (n, n)) + 1e-8 * rng.random((n, n))
        cost[rng.random((n, n)) < 0.3] = -np.inf if maximize else np.inf
        solution = lapcli.solve(cost, solver="numpy", maximize=maximize)
        optimum = scipy_objective(cost, maximize)
        assert abs(solution.objective - optimum) <= 2 * n * 10 * 2.0**-40


def test_infeasibility_is_found_before_solving(monkeypatch, rng):
    from lapcli.engines.cpu import numpy as numpy_engine

    monkeypatch.setattr(numpy_engine, "solve_square", lambda *a: pytest.fail("solved an infeasible problem"))
    cost = rng.random((50, 80))
    cost[:, :] = np.inf
    cost[:, :30] = 1.0  # 50 rows, only 30 allowed columns
    with pytest.raises(lapcli.InfeasibleError):
        lapcli.solve(cost, solver="numpy")


# ----------------------------------------------------------------------------- the tolerance's edge
# Duals built by hand from a known optimal assignment (the diagonal): u[0] is raised by `excess`
# above the tight value and v[0] lowered by the same, so every assigned pair stays exactly tight
# while the one entry (0, 1) gets reduced cost c[0, 1] − u[0] − v[1] = −excess. Every number is a
# small multiple of a power of two, so the reduced costs are exact in float64.
EDGE_COST = np.array([[0.0, 1.0, 3.0, 4.0],
                      [2.0, 0.0, 1.0, 4.0],
                      [4.0, 3.0, 0.0, 2.0],
                      [1.0, 4.0, 2.0, 0.0]])


def edge_duals(cost, excess):
    """(col_of_row, u, v) for the diagonal of ``cost`` (optimal: it costs 0, every entry is ≥ 0),
    with one reduced cost, at (0, 1), equal to −excess and every other one ≥ 0."""
    k = cost.shape[0]
    u = np.zeros(k, dtype=cost.dtype)
    v = np.zeros(k, dtype=cost.dtype)
    u[0] = cost[0, 1] + excess
    v[0] = cost[0, 0] - u[0]
    return np.arange(k), u, v


def float_edge_work():
    work = prepare(EDGE_COST).work_on()  # the work matrix and tolerance the engines certify with
    assert work.values.dtype == np.float64 and np.array_equal(work.values, EDGE_COST)  # reduced: unchanged
    assert work.eps == 4 * 4 * 2.0**-50  # eps = k·S·2^-50 (lapcli/problem.py): k = 4, spread S = 4
    return work.values, work.eps


def reduced_costs(cost, u, v):
    return cost - u[:, None] - v[None, :]


def test_certify_rejects_a_float_reduced_cost_of_minus_twice_the_tolerance():
    cost, tol = float_edge_work()
    col, u, v = edge_duals(cost, 2 * tol)
    slack = reduced_costs(cost, u, v)
    assert slack.min() == slack[0, 1] == -2 * tol  # exactly the value meant, no rounding
    assert np.all(slack[np.arange(4), col] == 0)  # every assigned pair tight: only feasibility fails
    with pytest.raises(SolverError, match="duals infeasible"):
        certify(cost, col, u, v, tol, "test")


def test_certify_accepts_a_float_reduced_cost_of_minus_half_the_tolerance():
    cost, tol = float_edge_work()
    col, u, v = edge_duals(cost, 0.5 * tol)
    assert reduced_costs(cost, u, v).min() == -0.5 * tol
    certificate = certify(cost, col, u, v, tol, "test")
    assert certificate.certified and certificate.min_slack == -0.5 * tol and certificate.tolerance == tol
    assert certificate.max_assigned_slack == 0


def test_certify_rejects_an_integer_reduced_cost_of_minus_one():
    problem = prepare(EDGE_COST.astype(np.int64))
    work = problem.work_on()
    assert work.values.dtype.kind == "i" and work.eps == 0  # integers: exact, no tolerance
    col, u, v = edge_duals(work.values.astype(np.int64), 1)
    assert reduced_costs(work.values.astype(np.int64), u, v).min() == -1
    with pytest.raises(SolverError, match="duals infeasible"):
        certify(work.values, col, u, v, work.eps, "test")
    col, u, v = edge_duals(work.values.astype(np.int64), 0)  # the same duals at the edge: a tie, proved
    assert certify(work.values, col, u, v, work.eps, "test").min_slack == 0


@pytest.mark.parametrize("kind", ["float", "int"])
def test_the_host_check_reads_every_chunk_of_a_large_matrix(kind, monkeypatch):
    """The host check reads the slacks chunk by chunk (certificate.HOST_CHUNK_ELEMENTS): a dual
    violated in the last row of a matrix many chunks long is found, as in the first."""
    import lapcli.certificate as certificate_module

    monkeypatch.setattr(certificate_module, "HOST_CHUNK_ELEMENTS", 3 * 40)  # three rows of 40 a chunk
    k = m = 40  # fourteen chunks, the last one partial
    dtype = np.float64 if kind == "float" else np.int64
    cost = np.full((k, m), 10, dtype=dtype)
    cost[np.arange(k), np.arange(k)] = 0
    col, u, v = np.arange(k), np.zeros(k, dtype=dtype), np.zeros(m, dtype=dtype)
    assert certify(cost, col, u, v, 0.0, "test").min_slack == 0
    for row in (0, k - 1):
        broken = cost.copy()
        broken[row, (row + 1) % m] = -1  # one pair below zero reduced cost: the duals are infeasible there
        with pytest.raises(SolverError, match="duals infeasible"):
            certify(broken, col, u, v, 0.0, "test")


def test_a_column_taken_twice_is_no_assignment_whatever_the_duals():
    """Duals feasible and tight on both pairs prove nothing when two rows share a column: refused."""
    with pytest.raises(SolverError, match="do not take distinct columns"):
        certify(np.array([[0, 5], [0, 5]]), np.array([0, 0]), np.array([0, 0]), np.array([0, 5]), 0.0, "x")
    with pytest.raises(SolverError, match="do not take distinct columns"):  # rectangular too
        certify(np.array([[0.0, 5.0, 7.0], [0.0, 5.0, 7.0]]), np.array([0, 0]), np.zeros(2), np.zeros(3), 1e-9, "x")
    assert certify(np.array([[0, 5], [5, 0]]), np.array([0, 1]), np.zeros(2, np.int64), np.zeros(2, np.int64),
                   0.0, "x").certified


def exact_optimum(cost: np.ndarray, maximize: bool) -> Fraction:
    """The optimum of a small square float matrix in exact arithmetic (every permutation)."""
    totals = (sum((Fraction(float(cost[i, j])) for i, j in enumerate(p)), Fraction(0))
              for p in itertools.permutations(range(len(cost))))
    return max(totals) if maximize else min(totals)


@pytest.mark.parametrize("solver", ["numpy", "scipy", "auto"])
def test_the_reduction_rounding_is_inside_objective_within(solver):
    """[[2, −1e20], [1e20, 1000]]: the row reduction rounds 2 + 1e20 and 1e20 − 1000 to one value,
    the column reduction leaves zeros, and the engines' tolerance (~1e-323 on those zeros) says
    nothing of what was rounded away: numpy's answer 1002 is 1002 above the optimum 0.
    ``objective_within`` covers it (2⁻⁵¹ of 1e20 is 44,409)."""
    cost = np.array([[2.0, -1e20], [1e20, 1000.0]])
    solution = lapcli.solve(cost, solver=solver)
    within = solution.report.certificate["objective_within"]
    assert solution.report.certified
    assert Fraction(solution.objective) - exact_optimum(cost, False) <= Fraction(within)
    assert within < 1e6  # and says how far: 2^-50·1e20 is 88,818


@pytest.mark.parametrize("maximize", [False, True])
def test_every_answer_is_within_its_objective_within_of_the_exact_optimum(rng, maximize):
    """Small squares of mixed magnitudes (±1e20, ±1e6 with fractions, small integers: the
    reductions round), every CPU engine with a certificate: the exact optimum (every permutation,
    in fractions) is within the certificate's ``objective_within`` of the answer."""
    scales = np.array([1e20, 1e6, 1.0, 1e-3])
    for _ in range(60):
        n = int(rng.integers(2, 6))
        cost = (rng.choice(scales, (n, n)) * rng.choice([-1, 1], (n, n)) * rng.integers(1, 4, (n, n))
                + rng.integers(0, 5, (n, n)) * rng.choice([1.0, 0.5, 0.1], (n, n)))
        optimum = exact_optimum(cost, maximize)
        for solver in ("numpy", "scipy", "auto"):
            solution = lapcli.solve(cost, solver=solver, maximize=maximize)
            total = sum((Fraction(float(cost[r, c])) for r, c in zip(solution.row_ind, solution.col_ind)), Fraction(0))
            gap = optimum - total if maximize else total - optimum
            assert gap <= Fraction(solution.report.certificate["objective_within"]), (solver, cost.tolist())


def test_objective_within_is_reported_for_integers_stacks_and_point_sets(rng):
    assert lapcli.solve(rng.integers(0, 9, (6, 6))).report.certificate["objective_within"] == 0
    stack = lapcli.solve_batch(rng.random((3, 100, 100)), certify=True)
    assert 0 < stack.report.certificate["objective_within"] < 1e-9
    points = lapcli.solve_points(rng.random((30, 2)), rng.random((40, 2)))
    assert 0 < points.report.certificate["objective_within"] < 1e-9


def test_the_answer_a_cap_retry_keeps_carries_the_rounding_too(monkeypatch):
    """A CapRetry keeps the first answer for a caller whose capped solve runs out of time: its
    certificate's objective_within covers the reduction's rounding as the final one does."""
    from lapcli import cost_cap
    from lapcli.engines.cpu import numpy as numpy_engine

    def retry(work, *args, **options):
        raise cost_cap.CapRetry(True, 1.0)

    monkeypatch.setattr(cost_cap, "tightened", retry)
    cost = np.array([[2.0, -1e20], [1e20, 1000.0]])
    with pytest.raises(cost_cap.CapRetry) as raised:
        numpy_engine.run(prepare(cost))
    first = raised.value.first
    assert first.certificate["objective_within"] >= math.fsum(cost[first.rows, first.cols].tolist())  # the optimum is 0


def test_objective_within_stays_finite_where_the_row_reduced_total_passes_the_range():
    """Every row −1e308, 0.7e308, 0.7e308: the answer's total above its rows' least costs is
    3.4e308, past float64's range, though 2⁻⁵⁰ of it is not."""
    solution = lapcli.solve(np.array([[-1e308, 0.7e308, 0.7e308]] * 3), solver="numpy")
    within = solution.report.certificate["objective_within"]
    assert solution.objective == pytest.approx(0.4e308) and 2.0**-51 * 1.7e308 * 2 <= within < 1e300


def test_duals_shifted_far_state_a_bound_that_holds_despite_the_checks_rounding():
    """u + t and v − t leave every true slack as it is, but c − u − v read in float64 rounds by
    t·2⁻⁵²: at t = 2⁶⁰ the off-diagonal answer (2, the optimum 0) reads tight; the bound it states
    must still cover the gap."""
    cost, col = np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([1, 0])
    proof = certify(cost, col, np.full(2, 2.0**60), np.full(2, -(2.0**60)), 2 * 2.0**-50, "test")
    assert proof.objective_within >= 2.0
    fair = certify(cost, np.array([0, 1]), np.zeros(2), np.zeros(2), 2 * 2.0**-50, "test")
    assert fair.objective_within < 1e-12  # duals of the costs' size: the bound stays the tolerance's


def test_integer_duals_past_int64_are_refused_not_wrapped():
    """c − u − v in int64 wraps past 2⁶³: these duals read every slack ≥ 0 and the assigned ones 0
    for an answer costing 2 where the optimum is 0."""
    col = np.array([1, 0])
    for cost in (np.array([[0, 1], [1, 0]], dtype=np.int64), np.array([[0, 1], [1, 0]], dtype=np.int32)):
        with pytest.raises(SolverError, match="too large"):
            certify(cost, col, np.array([0, -(2**63)]), np.array([-(2**63) + 1, 1]), 0.0, "test")
    assert certify(np.array([[0, 1], [1, 0]]), np.array([0, 1]), np.zeros(2, np.int64), np.zeros(2, np.int64),
                   0.0, "test").certified


def test_an_answer_that_leaves_a_row_out_fails_its_certificate_every_time():
    """The recovery reads a column for every work row; one the answer left out must not be read from
    whatever memory held before (a freed array of the right values first)."""
    from lapcli.duals import certified_duals, certified_stack

    cost = np.arange(9.0).reshape(3, 3) % 4
    for _ in range(3):
        np.array([0, 1, 2], dtype=np.int64)  # noqa: B018 - leaves a permutation in the allocator's hands
        with pytest.raises(SolverError):
            certified_duals(prepare(cost), np.array([0, 1]), np.array([0, 1]), "test", None)
    stack = prepare(np.arange(6.0).reshape(1, 3, 2), stack=True)
    with pytest.raises(SolverError):
        certified_stack(stack, np.array([[0, -1, -1]]), "test", None, force=True)


def test_a_certificate_of_costs_rounded_as_asked_claims_no_bound_on_the_given_objective(tmp_path):
    """--dtype float32 on float64 costs printed "certified optimal (objective within 1e-14 of the
    optimum)" beside the given costs' objective, 2.000000002 where their optimum is 2: the
    certificate proves the rounded problem's optimum, and now says so instead of that bound."""
    from click.testing import CliRunner

    from lapcli.cli.main import cli

    cost = np.array([[1 + 1e-9, 1.0], [1.0, 1 + 1e-9]])
    for report in (lapcli.solve(cost, dtype="float32").report,
                   lapcli.solve_batch(np.stack([cost, cost]), dtype="float32", certify=True).report):
        assert report.certified and report.certificate["objective_within"] is None
        assert report.certificate["of"] == "the costs as rounded to the dtype asked for"
    exact = lapcli.solve(cost.astype(np.float32).astype(np.float64), dtype="float32").report  # nothing rounded
    assert "of" not in exact.certificate and exact.certificate["objective_within"] is not None
    np.save(tmp_path / "m.npy", cost)
    shown = CliRunner().invoke(cli, ["solve", str(tmp_path / "m.npy"), "--dtype", "float32"]).stderr
    assert "certified optimal for the costs as rounded to the dtype asked for (duals:" in shown
    assert "objective within" not in shown


@pytest.mark.parametrize("solver", ["scipy", "numpy"])
def test_returned_float_duals_hold_within_the_stated_tolerance_and_rounding(rng, solver):
    """Solution's promise for float duals, in exact arithmetic: sign·(cost − u − v) ≥ −(tolerance + ρ),
    and within tolerance + ρ of 0 on the assignment, ρ = 2^-52 (|u_i| + |v_j| + the largest finite
    |cost| of row i and column j) (lapcli.results). Costs of far apart magnitudes and a forbidden
    pair's sentinel make the mapped-back duals round; duals a solve at an inflated tolerance drifted
    to the large costs' magnitude once passed a check at the capped tolerance they round past."""
    cases = [(np.array([[1e-20, 1.0, 3.0]]), False), (np.array([[1e-20, 3.0]]), True),
             (np.array([[1e-300], [np.inf]]), False), (np.array([[1e-300, 3e-300], [np.inf, 2e-300]]), False),
             (np.array([[np.inf, 1.0], [1.0, 1e-112], [1e264, 1e297]]), False),
             (np.array([[1e100, 1e300, -np.inf, 1e200], [1e200, 1e300, 1e300, 1.0], [1e100, 1e200, 1e-200, -np.inf]]),
              True),
             (np.exp(rng.random((12, 9)) * 1400 - 700), False), (np.exp(rng.random((9, 12)) * 80 - 40), True)]
    for cost, maximize in cases:
        solution = lapcli.solve(cost, solver=solver, certify=True, maximize=maximize)
        u, v = solution.duals
        tolerance, sign = Fraction(solution.report.certificate["tolerance"]), -1 if maximize else 1
        assigned = set(zip(solution.row_ind.tolist(), solution.col_ind.tolist()))
        finite = np.where(np.isfinite(cost), np.abs(cost), 0.0)
        for i, j in itertools.product(range(cost.shape[0]), range(cost.shape[1])):
            if not np.isfinite(cost[i, j]):
                continue
            slack = sign * (Fraction(cost[i, j]) - Fraction(u[i]) - Fraction(v[j]))
            largest = max(finite[i].max(), finite[:, j].max())
            allowed = tolerance + Fraction(2.0**-52) * (abs(Fraction(u[i])) + abs(Fraction(v[j])) + Fraction(largest))
            assert slack >= -allowed, (cost, i, j)
            assert (i, j) not in assigned or abs(slack) <= allowed, (cost, i, j)


@pytest.mark.parametrize("solver", ["scipy", "lapx", "numpy"])
def test_large_costs_no_optimum_takes_leave_a_capped_certificate_with_small_duals(solver):
    """Large costs no optimum takes inflate the work's tolerance; the answer is proved at the capped
    one with duals of the answer's own size: recovered (scipy, lapx) from the costs capped at C, and
    the numpy engine's solved again capped. Duals drifted to the large costs' magnitude (1e264) once
    passed a check at the capped tolerance on slacks that rounded far past it (an assigned pair of the
    returned duals missed by 1)."""
    if solver == "lapx":
        pytest.importorskip("lap")
    cost = np.array([[np.inf, 1.0], [1.0, 1e-112], [1e264, 1e297]])
    solution = lapcli.solve(cost, solver=solver, certify=True)
    assert solution.report.certified and solution.report.certificate["tolerance"] < 1e-13
    u, v = solution.duals
    assert np.abs(u).max() + np.abs(v).max() < 10
    assigned = cost[solution.row_ind, solution.col_ind] - u[solution.row_ind] - v[solution.col_ind]
    assert np.abs(assigned).max() <= 1e-13 and solution.objective == 2.0
    assert solution.report.details.get("cost_cap_rounds") == (1 if solver == "numpy" else None)


def test_the_checked_relation_names_the_sense_its_slacks_are_of(rng):
    """The slacks are the minimised work's: maximising, min_slack is that of −cost with −u, −v, which
    the certificate's words say (they once stated u + v <= c, which a maximisation's duals break)."""
    cost = rng.random((5, 7))
    for solution in (lapcli.solve(cost, maximize=True, certify=True),
                     lapcli.solve_batch(np.stack([cost, cost]), maximize=True, certify=True)):
        assert solution.report.certificate["checked"].endswith("(maximising: of −cost, −u, −v)")
    solution = lapcli.solve(cost, maximize=True, certify=True)
    u, v = solution.duals
    slack = -cost + u[:, None] + v[None, :]  # (−cost) − (−u) − (−v)
    tolerance = solution.report.certificate["tolerance"] + 2.0**-50
    assert slack.min() >= -tolerance and slack.min() == pytest.approx(solution.report.certificate["min_slack"], abs=1e-12)
