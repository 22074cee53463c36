"""Cityblock sets that lie apart in some coordinates (lapcli.points_frame.Separation), on the CPU:
those coordinates' terms are the same for every assignment, so the sets are solved without them,
and the mapped duals prove the answer on the true costs, in both senses, wherever the sets lie."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.points import distance_matrix, prepare_points
from lapcli.points_frame import separated

# (the columns' shift from the rows' U[0, 1)^d in each coordinate, where both lie): every shift of
# 1 or more (or -1 or less) puts that coordinate apart
PLACES = {
    "apart in x": ((3.0, 0.3, 0.0), 0.0),
    "apart in y, below": ((0.2, -1.0, 0.5), 0.0),
    "apart everywhere": ((2.0, -5.0, 1.5), 0.0),
    "touching in x": ((1.0, 0.0, 0.0), 0.0),
    "apart in x, far from the origin": ((4.0, 0.5, 0.0), 1e6),
    "apart in x, only x far from the origin": ((3.0, 0.2, 0.0), (1e12, 0.0, 0.0)),
}


def placed(rng, n, dim, shift, origin, integer=False):
    a, b = rng.random((n, dim)), rng.random((n, dim)) + np.asarray(shift[:dim])
    if integer:  # ties everywhere: coordinates on a grid
        a, b = np.floor(8 * a) / 8, np.floor(8 * b) / 8
    if shift[0] == 1.0:  # a row and a column on the same value: still apart
        a[0, 0], b[0, 0] = 1.0, 1.0
    origin = np.asarray(origin)[:dim] if np.ndim(origin) else origin
    return origin + a, origin + b


def assert_duals_prove(cost, solution, maximize):
    """The returned duals on the true costs: c − u − v ≥ −tol everywhere (≤ tol when maximising),
    within tol on the assignment."""
    u, v = (np.asarray(side) for side in solution.duals)
    slack = cost - u[:, None] - v[None, :]
    tolerance = 1e-9 * max(1.0, float(np.abs(cost).max()))
    assert np.abs(slack[solution.row_ind, solution.col_ind]).max() <= tolerance
    assert (-slack if maximize else slack).min() >= -tolerance


@pytest.mark.parametrize("integer", [False, True])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("dim", [2, 3])
@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("solver", ["auto", "scipy", "numpy"])
def test_sets_apart_are_solved_without_those_coordinates_and_certified(rng, solver, place, dim, maximize, integer):
    a, b = placed(rng, 70, dim, *PLACES[place], integer=integer)
    solution = lapcli.solve_points(a, b, "cityblock", maximize=maximize, solver=solver)
    cost = distance_matrix(a, b, "cityblock")
    rows, cols = scipy_lsa(cost, maximize=maximize)
    assert solution.report.certified, solution.report.certificate
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12, abs=1e-9)
    assert "lie apart in coordinate" in solution.report.details["separated"]
    assert solution.report.reason.startswith(solution.report.details["separated"])
    assert solution.report.maximize is maximize
    assert sorted(solution.col_ind) == list(range(70))
    assert_duals_prove(cost, solution, maximize)


def test_the_reduced_sets_keep_the_other_coordinates(rng):
    a, b = placed(rng, 50, 3, (0.5, 2.0, -3.0), 0.0)
    separation = separated(prepare_points(a, b, "cityblock"))
    assert separation.apart == separation.dropped == (1, 2) and separation.signs == (1.0, -1.0)
    np.testing.assert_array_equal(separation.reduced.a, a[:, [0]])
    np.testing.assert_array_equal(separation.reduced.b, b[:, [0]])
    assert separation.describe() == ("the sets lie apart in coordinates 1, 2: the terms of coordinates 1, 2 are "
                                     "the same for every assignment, solved on coordinate 0")
    everywhere = separated(prepare_points(a, b + 4.0, "cityblock"))  # every coordinate: the first kept
    assert everywhere.apart == (0, 1, 2) and everywhere.dropped == (1, 2)
    np.testing.assert_array_equal(everywhere.reduced.a, a[:, [0]])


def test_the_dropped_terms_add_up_to_the_true_costs(rng):
    """c(i, j) = c_reduced(i, j) + R_i + C_j, R and C the terms Separation.duals adds."""
    a, b = placed(rng, 40, 3, (2.5, 0.1, -1.5), 0.0)
    problem = prepare_points(a, b, "cityblock")
    separation = separated(problem)
    row_terms, column_terms = separation.duals(np.zeros(40), np.zeros(40))
    reduced = distance_matrix(separation.reduced.a, separation.reduced.b, "cityblock")
    np.testing.assert_allclose(distance_matrix(a, b, "cityblock"), reduced + row_terms[:, None] + column_terms[None, :],
                               rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", ["overlapping by one point", "rectangular", "sqeuclidean", "one coordinate",
                                  "in place"])
def test_no_separation_where_no_coordinate_lies_apart_or_the_problem_is_another(rng, case):
    a, b = placed(rng, 40, 2, (3.0, 0.0), 0.0)
    metric = "cityblock"
    if case == "overlapping by one point":
        b[7, 0] = a[:, 0].max() - 1e-9
    elif case == "rectangular":
        b = np.vstack([b, b[:3] + 0.5])
    elif case == "sqeuclidean":
        metric = "sqeuclidean"
    elif case == "one coordinate":
        a, b = a[:, :1], b[:, :1]
    else:
        b = rng.random((40, 2))
    assert separated(prepare_points(a, b, metric)) is None
    solution = lapcli.solve_points(a, b, metric, solver="scipy")
    assert "separated" not in solution.report.details


def test_uncertified_answers_report_the_true_objective_and_no_duals(rng):
    """Without a certificate (certify=False) no duals leave: the reduced problem's are not the
    original's."""
    a, b = placed(rng, 60, 2, (0.4, 2.0), 0.0)
    solution = lapcli.solve_points(a, b, "cityblock", certify=False)
    cost = distance_matrix(a, b, "cityblock")
    rows, cols = scipy_lsa(cost)
    assert solution.report.solver == "sorted" and not solution.report.certified
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12)
    assert solution.duals is None


def test_minkowski_of_p_1_is_reduced_as_cityblock(rng):
    """minkowski with p = 1 is cityblock: the reduced sets (two coordinates kept) are solved under
    cityblock costs, not minkowski's default p."""
    a, b = placed(rng, 40, 3, (3.0, 0.2, 0.1), 0.0)
    solution = lapcli.solve_points(a, b, "minkowski", p=1, solver="scipy")
    cost = distance_matrix(a, b, "cityblock")
    assert solution.report.certified and "separated" in solution.report.details
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_an_uncertified_reduced_answer_leaves_no_duals(rng, monkeypatch):
    """Duals of the reduced sets that were not certified are not the original's: none leave."""
    from lapcli import pipeline_points

    solve_points = pipeline_points.solve_points

    def uncertified(*args, **kwargs):  # the reduced solve, its duals kept but not proved
        solution = solve_points(*args, **kwargs)
        assert solution.duals is not None
        solution.report.certified = False
        return solution

    monkeypatch.setattr(pipeline_points, "solve_points", uncertified)
    a, b = placed(rng, 40, 3, (3.0, 0.2, 0.1), 0.0)
    solution = solve_points(a, b, "cityblock", solver="numpy")
    assert "separated" in solution.report.details and solution.duals is None


def test_a_requested_solver_s_refusal_says_how_the_sets_were_reduced(rng):
    """``sorted`` asked for on 3-D sets apart in x refuses the 2-D reduced sets: the message says
    why it counts 2 dimensions where the caller gave 3."""
    a, b = placed(rng, 40, 3, (3.0, 0.2, 0.1), 0.0)
    with pytest.raises(lapcli.LapInputError) as refused:
        lapcli.solve_points(a, b, "cityblock", solver="sorted")
    assert "points of 2 dimensions" in str(refused.value) and "lie apart in coordinate 0" in str(refused.value)
    assert "\n" not in str(refused.value)
