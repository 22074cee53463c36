"""Squared distances between two sets of equal size in one frame (lapcli.points_frame), on the CPU:
the moved problem's optimal assignments are the original's, and its duals, mapped back, prove
that on the original costs."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.points import distance_matrix, prepare_points
from lapcli.points_frame import onto_rows

# (shift, scale) of the columns' set against the rows' U[0, 1)^d
PLACES = [(0.0, 1.0), (0.5, 1.0), (3.0, 1.0), (-40.0, 0.05), (0.25, 2.0), (1e3, 7.0)]


def sets(rng, n, dim, shift, scale):
    return rng.random((n, dim)), shift + scale * rng.random((n, dim))


@pytest.mark.parametrize("shift, scale", PLACES)
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_the_moved_duals_prove_the_original_optimum(rng, dim, shift, scale):
    """The moved problem solved (scipy, its duals recovered by lapcli), its column duals mapped
    back (the row duals follow from the assigned pairs): every reduced cost of the original is
    ≥ −tolerance, and the assignment's total is scipy's optimum of the original."""
    a, b = sets(rng, 60, dim, shift, scale)
    problem = prepare_points(a, b, "sqeuclidean")
    frame = onto_rows(problem)
    moved = distance_matrix(frame.moved.a, frame.moved.b, "sqeuclidean")
    solved = lapcli.solve(moved, solver="scipy", certify=True)
    v = frame.column_duals(solved.duals[1], problem.b, frame.moved.b)
    cost = distance_matrix(a, b, "sqeuclidean")
    rows, cols = solved.row_ind, solved.col_ind
    u = cost[rows, cols] - v[cols]
    slack = cost - u[:, None] - v[None, :]
    tolerance = problem.tolerance()
    assert slack.min() >= -tolerance
    assert cost[rows, cols].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_the_frame_is_the_rows_mean_and_radius(rng):
    """The moved columns have the rows' mean and root-mean-square radius; the rows stay as given;
    the ratio is the columns' radius over the rows'."""
    a, b = sets(rng, 500, 2, 5.0, 3.0)
    frame = onto_rows(prepare_points(a, b, "sqeuclidean"))
    moved = frame.moved.b
    assert frame.moved.a is frame.original.a
    np.testing.assert_allclose(moved.mean(axis=0), a.mean(axis=0), atol=1e-12)

    def radius(points):
        return np.sqrt(((points - points.mean(axis=0)) ** 2).sum(axis=1).mean())

    assert radius(moved) == pytest.approx(radius(a), rel=1e-12)
    assert frame.ratio == pytest.approx(radius(b) / radius(a), rel=1e-12)
    assert frame.tolerance() <= frame.original.tolerance() / frame.ratio


@pytest.mark.parametrize("case", ["euclidean", "maximize", "rectangular", "one place", "empty"])
def test_no_frame_where_the_answer_depends_on_where_the_sets_lie(rng, case):
    """Other metrics, maximised or rectangular problems have no such frame (their optimal
    assignments change as a set moves or scales), and sets whose points all lie at one place
    need none (every assignment is optimal)."""
    a, b = sets(rng, 30, 2, 1.0, 1.0)
    options = {"metric": "sqeuclidean"}
    if case == "euclidean":
        options["metric"] = "euclidean"
    elif case == "maximize":
        options["maximize"] = True
    elif case == "rectangular":
        b = np.vstack([b, b[:5] + 2.0])
    elif case == "one place":
        b = np.ones_like(b)
    else:
        a, b = a[:0], b[:0]
    assert onto_rows(prepare_points(a, b, **options)) is None
