"""Integer costs are solved exactly on every path: ``auto`` never lets scipy's float64 round them.

The reference is a brute-force enumeration in Python integers, on small matrices whose entries sit
near 2^53 (where float64 stops being exact), near 2^62 and 2^63 (the ends of int64 and uint64), and
below zero; square, wide and tall; minimised and maximised; one matrix and stacks.
"""

import itertools

import numpy as np
import pytest

from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.errors import LapInputError, TooWideError


def brute_force(cost: np.ndarray, maximize: bool) -> int:
    """The optimum over every assignment of the smaller side, in exact Python integers."""
    rows = cost.tolist()
    n, m = cost.shape
    if n <= m:
        totals = (sum(rows[i][j] for i, j in enumerate(p)) for p in itertools.permutations(range(m), n))
    else:
        totals = (sum(rows[i][j] for j, i in enumerate(p)) for p in itertools.permutations(range(n), m))
    return max(totals) if maximize else min(totals)


# (dtype, low, spread): entries in [low, low + spread)
WIDE = [("int64", 2**53, 8), ("int64", 2**53 - 4, 9), ("int64", 2**62, 1000), ("int64", -(2**63), 16),
        ("int64", -(2**53) - 8, 2**54), ("uint64", 2**63, 32), ("uint64", 2**64 - 64, 64)]


def draw(rng, dtype, low, spread, shape):
    return (np.array(low, dtype=object) + rng.integers(0, spread, shape).astype(object)).astype(dtype)


@pytest.mark.parametrize("dtype, low, spread", WIDE)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (5, 3)])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("solver", ["auto", "numpy"])  # numpy: the work builder's exact reductions
def test_one_matrix_agrees_with_brute_force_on_wide_integers(rng, dtype, low, spread, shape, maximize, solver):
    for _ in range(12):
        cost = draw(rng, dtype, low, spread, shape)
        solution = lapcli.solve(cost, maximize=maximize, solver=solver)
        assert solution.objective == brute_force(cost, maximize), (solution.report.solver, cost.tolist())
        assert solution.report.certified  # scipy's answers too: duals recovered (lapcli.duals)
        assert_exact_duals(cost, solution, maximize)


def assert_exact_duals(cost, solution, maximize):
    """The duals prove the answer in Python integers: cost − u − v ≥ 0 (≤ 0 maximising) everywhere,
    0 on the pairs; int64 wherever int64 can hold them (they once wrapped past 2^63)."""
    u, v = solution.duals
    slack = [[int(c) - int(u[i]) - int(v[j]) for j, c in enumerate(row)] for i, row in enumerate(cost.tolist())]
    sign = -1 if maximize else 1
    assert min(sign * s for row in slack for s in row) == 0
    assert all(slack[i][j] == 0 for i, j in zip(solution.row_ind, solution.col_ind))
    assert u.dtype == v.dtype and u.dtype in (np.int64, object)
    if max(abs(c) for row in cost.tolist() for c in row) < 2**62:
        assert u.dtype == np.int64
    n, m = cost.shape
    if n != m:  # the rectangular form: the longer side's duals ≤ 0 (≥ 0 maximising), 0 where unmatched
        longer, matched = (v, solution.col_ind) if n < m else (u, solution.row_ind)
        assert all(sign * int(x) <= 0 for x in longer)
        assert all(int(longer[j]) == 0 for j in set(range(max(n, m))) - set(matched.tolist()))

@pytest.mark.parametrize("dtype, low, spread", WIDE)
@pytest.mark.parametrize("solver", ["scipy", "lapx"])
def test_the_float64_engines_are_exact_on_wide_integers_or_refuse_them(rng, dtype, low, spread, solver):
    """scipy and lapx compute in float64: they solve the integers exactly reduced, or refuse them
    (TooWideError, "too wide"), never a rounded answer. lapx was given the costs as float64 as they
    were: 300 × 300 costs of 2^62 + U[0, 10^6) came back 3,491 above the optimum."""
    if solver == "lapx" and not lapcli.engines.registry.get("lapx").available()[0]:
        pytest.skip("lapx is not installed")
    for shape in ((4, 4), (3, 5), (5, 3)):
        for maximize in (False, True):
            cost = draw(rng, dtype, low, spread, shape)
            try:
                solution = lapcli.solve(cost, maximize=maximize, solver=solver)
            except TooWideError as error:
                assert "too wide" in str(error)
                continue
            assert solution.objective == brute_force(cost, maximize), cost.tolist()
            assert solution.report.certified


@pytest.mark.parametrize("dtype, low, spread", WIDE)
@pytest.mark.parametrize("maximize", [False, True])
def test_stacks_agree_with_brute_force_on_wide_integers(rng, dtype, low, spread, maximize):
    for shape in ((6, 4, 4), (5, 3, 5), (5, 5, 3)):
        stack = draw(rng, dtype, low, spread, shape)
        solution = lapcli.solve_batch(stack, maximize=maximize)
        assert [int(o) for o in solution.objectives] == [brute_force(c, maximize) for c in stack]
        for cost, cols in zip(stack, solution.col_ind):  # a valid assignment of the smaller side
            assigned = cols[cols >= 0]
            assert len(assigned) == min(cost.shape) and len(set(assigned.tolist())) == len(assigned)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("solver", ["numpy", "auto"])
def test_integers_solved_as_floats_when_asked_are_exact_or_refused(rng, dtype, solver):
    """dtype="float64" took integer gaps for ties once eps = k·S·2^-50 reached 1 (3 × 3 near 2^49:
    844424930131971 for 844424930131970): exact, or refused where float arithmetic cannot be."""
    solved = refused = 0
    for low, spread in ((2**49, 2**48), (2**20, 2**12), (0, 2**23), (2**44, 2**44), (2**50, 2**51)):
        for _ in range(25):
            cost = draw(rng, "int64", low, spread, (3, 3) if low else (40, 40))
            try:
                solution = lapcli.solve(cost, solver=solver, dtype=dtype)
            except ValueError as error:
                assert "not taken as" in str(error) or "not solved exactly" in str(error)
                refused += 1
                continue
            expected = brute_force(cost, False) if len(cost) == 3 else int(cost[scipy_lsa(cost)].sum())
            assert solution.objective == expected and solution.report.certificate["tolerance"] < 0.5
            solved += 1
    assert solved and refused


def test_the_uint64_pair_near_2_to_the_64_is_exact():
    cost = np.array([[2**63 + 5, 2**63], [2**63, 2**63 + 5]], dtype=np.uint64)
    assert lapcli.solve(cost).objective == 2**64
    assert lapcli.solve(cost, maximize=True).objective == 2**64 + 10


@pytest.mark.parametrize("form", ["matrix", "stack", "list", "ragged", "batch"])
def test_python_integers_past_2_to_the_63_in_lists_are_exact(rng, form):
    """NumPy reads a nested list of integers of 2^63 or more beside smaller ones as float64, which
    rounds them: lapcli reads them as uint64 (the optimum below is 2498 under float64's pick), and
    refuses them beside negative ones, which no 64-bit integer type holds with them."""
    cost = (2**63 + rng.integers(-800, 3000, (3, 3)).astype(object)).tolist()
    cost[0][2] = 2**63 - 723  # one entry in int64's range: NumPy's list reading gives float64
    assert np.asarray(cost).dtype == np.float64  # what lapcli must not take
    best = brute_force(np.array(cost, dtype=object), False)
    small = [[1, 2], [3, 4]]
    if form == "matrix":
        scalars = [[np.uint64(v) if v >= 2**63 else np.int64(v) for v in row] for row in cost]  # NumPy's, alike
        assert np.asarray(scalars).dtype == np.float64
        objectives = [lapcli.solve(cost).objective, lapcli.solve(scalars).objective]
    elif form == "batch":
        columns = lapcli.batch_linear_assignment([cost, cost])  # torch-linear-assignment's form: columns only
        objectives = [sum(cost[i][int(j)] for i, j in enumerate(each)) for each in columns]
    else:
        costs = {"stack": [cost, cost], "list": [cost], "ragged": [cost, small]}[form]
        objectives = list(lapcli.solve_batch(costs).objectives[:1])
    assert objectives and all(int(o) == best and type(o) is not float for o in objectives)
    cost[1][1] = -5
    with pytest.raises(LapInputError, match="2\\^63 or more beside negative ones"):
        lapcli.solve(cost)
    cost[1][1] = np.inf  # a forbidden pair: float64 holds it, and rounds the integers (996 above the optimum)
    with pytest.raises(LapInputError, match="integers past 2\\^53 beside inf"):
        lapcli.solve(cost)
    cost[1][1] = 0.5  # a decimal: a float matrix, rounded as given (as the text reader reads one)
    assert lapcli.solve(cost).report.dtype == "float64"
    # coordinates are float64 to every metric: such a list of points is read as NumPy reads it
    assert lapcli.solve_points([[2**63, -1], [0, 0]], [[1, 1], [2, 2]]).col_ind.tolist() == [1, 0]


def test_integers_too_wide_even_reduced_go_to_the_exact_engine_or_are_refused():
    square = np.array([[0, 2**61], [1, 2**61 + 3]], dtype=np.int64)  # exact once columns are reduced too
    solution = lapcli.solve(square)
    assert solution.report.solver == "numpy" and "2^53" in solution.report.reason
    assert solution.objective == brute_force(square, False) and solution.report.certified
    with pytest.raises(TooWideError, match="too wide"):  # exit 2 on the command line
        lapcli.solve(square, solver="scipy")
    tall = np.array([[-(2**62), 2**62], [2**62, -(2**62)], [0, 1]], dtype=np.int64)
    with pytest.raises(TooWideError, match="does not round integers") as refused:  # exit 2 on the command line
        lapcli.solve(tall)
    # what a route that solves them after all reports (auto's scipy per problem on a GPU): the fact alone
    assert refused.value.fact.endswith("even reduced (spread · 4(n+1) ≥ 2^62)") and ";" not in refused.value.fact


def test_integers_near_a_floats_precision_are_refused_as_that_float(rng):
    """dtype="float64" on integers whose reduction (differences of two costs) leaves float64."""
    cost = np.array([[0, 2**53], [-2, 2**53 - 1]], dtype=np.int64)
    for solver in ("numpy", "scipy"):
        with pytest.raises(ValueError, match="not taken as float64 work"):
            lapcli.solve(cost, solver=solver, dtype="float64")
    assert lapcli.solve(cost).objective == 2**53 - 2


@pytest.mark.parametrize("dtype", ["int64", "uint64"])
@pytest.mark.parametrize("maximize", [False, True])
def test_a_ragged_member_too_wide_even_for_int64_duals_is_refused_by_name(rng, dtype, maximize):
    """A list's member whose integers span the whole 64-bit range is refused as a stack's would be
    (lapcli does not round integers), naming that member: not called NaN or a wrong infinity."""
    info = np.iinfo(dtype)
    wide = rng.integers(info.min, info.max, (4, 13), dtype=dtype, endpoint=True)
    listed = [rng.integers(0, 9, (3, 3)).astype(dtype), wide, rng.integers(0, 9, (2, 5)).astype(dtype)]
    with pytest.raises(lapcli.LapInputError, match=r"problem 1 of 3: integer costs span too wide a range"):
        lapcli.batch_linear_assignment(listed, maximize=maximize)
    with pytest.raises(lapcli.LapInputError, match="too wide"):
        lapcli.solve_batch(np.stack([wide, wide]), maximize=maximize)


def test_a_too_wide_member_is_refused_after_bad_entries_elsewhere_as_a_stack_is(rng):
    """NaN in one member and integers too wide for exact duals in another: the NaN is named first
    (a stack checks its entries before building its work); alone, the wide one is refused."""
    wide = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, (4, 6), dtype=np.int64, endpoint=True)
    with pytest.raises(ValueError, match=r"invalid numeric entries: problem 2 of 3"):
        lapcli.solve_batch([rng.random((3, 3)), wide, np.array([[np.nan]])])
    with pytest.raises(lapcli.LapInputError, match=r"problem 1 of 2: integer costs span too wide"):
        lapcli.solve_batch([rng.random((3, 3)), wide])


def test_a_wide_integer_member_s_columns_are_int64():
    """The exact twin's columns (int32 inside) come back int64, as every member's."""
    cost = np.array([[0, 2**55, 3], [2**55, 0, 7], [5, 9, 2**55]])
    col_ind = lapcli.batch_linear_assignment([cost, np.zeros((2, 2), np.int64)])
    assert col_ind[0].dtype == np.int64 and col_ind[0].tolist() == [2, 1, 0]  # 3 + 0 + 5


@pytest.mark.parametrize("code", ["u2", "u4", "u8", "i2", "i4", "i8", "f4", "f8"])
@pytest.mark.parametrize("maximize", [False, True])
def test_big_endian_costs_are_solved_as_their_values(rng, code, maximize):
    """A big-endian array holds the same numbers as its native twin: the same answers for a matrix,
    a stack and a list (a '>u4' once passed for a narrow type, was cast to int32 and wrapped: 2^32 − 1
    became −1, the worst pairs were taken and certified on the wrapped costs)."""
    info = np.iinfo(code) if code[0] in "iu" else None
    top = min(info.max, 2**62) if info is not None else 1e6
    low = max(info.min, -(2**62)) if info is not None and code[0] == "i" else 0
    native = np.empty((3, 4, 4), dtype=code)
    native[...] = rng.choice(np.array([low, top, top - 1, low + 1, 0], dtype=code), size=(3, 4, 4))
    big = native.astype(np.dtype(code).newbyteorder(">"))
    assert not big.dtype.isnative and np.array_equal(big, native)

    def answers(costs):
        try:
            stack = lapcli.solve_batch(costs, maximize=maximize)
            listed = lapcli.solve_batch(list(costs), maximize=maximize)
            one = lapcli.solve(costs[0], maximize=maximize)
        except (ValueError, lapcli.SolverError) as refusal:  # too wide for exact duals: refused alike
            return type(refusal).__name__
        return ([int(o) if code[0] in "iu" else o for o in stack.objectives], stack.col_ind.tolist(),
                [c.tolist() for c in listed.col_ind], one.col_ind.tolist(), one.objective)

    assert answers(big) == answers(native)
    if code[0] in "iu" and np.iinfo(code).max <= 2**32:  # no refusal here: the true optimum, by brute force
        assert answers(big)[0] == [brute_force(c.astype(np.int64), maximize) for c in native]


def test_big_endian_uint64_past_2_to_the_63_is_maximised_exactly():
    """'>u8' was not np.uint64 to the exact negation: 2^64 − 1 became −1 under maximize."""
    cost = np.array([[2**63 + 5, 2**63 - 1], [2**63 - 1, 2**63 - 1]], dtype=">u8")
    assert lapcli.solve_batch(cost[None], maximize=True).objectives.tolist() == [2**64 + 4]
    for order in "<>":  # a ragged member too wide for exact duals: refused in either order (was: objective 1)
        member = np.array([[1], [0], [2**64 - 1]], dtype=order + "u8")
        with pytest.raises(LapInputError, match="problem 0 of 2: integer costs span too wide"):
            lapcli.solve_batch([member, np.zeros((2, 2))], maximize=True)


def test_scipy_asked_for_integers_float64_cannot_hold_is_bad_input_with_advice_that_works():
    """It was a SolverError (exit 1, "use --solver numpy"): a refusal of the input by the engine
    asked for, a ValueError (exit 2), whose advice, solver numpy, solves these exactly."""
    cost = np.array([[0, 2**57 + 1, 5], [2**57, 3, 2**57 - 1], [7, 2**56, 0]], dtype=np.int64)
    with pytest.raises(TooWideError, match="solver numpy .or auto. solves integers exactly"):
        lapcli.solve(cost, solver="scipy")
    rows, cols = lapcli.solve(cost, solver="numpy").row_ind, lapcli.solve(cost, solver="numpy").col_ind
    best = min(sum(int(cost[i, p[i]]) for i in range(3)) for p in itertools.permutations(range(3)))
    assert sum(int(cost[r, c]) for r, c in zip(rows, cols)) == best == lapcli.solve(cost).objective
