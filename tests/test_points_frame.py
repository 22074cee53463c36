"""Squared distances between two sets of equal size in one frame (lapcli.points_frame), on the CPU:
the moved problem's optimal assignments are the original's, and its duals, mapped back, prove
that on the original costs, wherever the sets lie (far from the origin too)."""

import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.errors import SolverError
from lapcli.points import distance_matrix, prepare_points
from lapcli.points_frame import mirrored, onto_rows

# (where both sets lie, the columns' shift from the rows, their scale) against the rows' U[0, 1)^d
PLACES = [(0.0, 0.0, 1.0), (0.0, 0.5, 1.0), (0.0, 3.0, 1.0), (0.0, -40.0, 0.05), (0.0, 0.25, 2.0),
          (0.0, 1e3, 7.0), (1e4, 0.5, 1.0), (1e6, 0.5, 1.0), (-1e6, 2.0, 1e-3), (5e6, 0.0, 1e3)]


def sets(rng, n, dim, origin, shift, scale):
    return origin + rng.random((n, dim)), origin + shift + scale * rng.random((n, dim))


def min_reduced_cost(cost, rows, cols, v):
    """The least c − u − v over all pairs, u from the assigned pairs (u = c − v there)."""
    u = cost[rows, cols] - v[cols]
    return (cost - u[:, None] - v[None, :]).min()


def solved_in_frame(rng, dim, place, n=60):
    a, b = sets(rng, n, dim, *place)
    problem = prepare_points(a, b, "sqeuclidean")
    frame = onto_rows(problem)
    moved = distance_matrix(frame.moved.a, frame.moved.b, "sqeuclidean")
    return problem, frame, lapcli.solve(moved, solver="scipy", certify=True)


@pytest.mark.parametrize("place", PLACES)
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_the_moved_duals_prove_the_original_optimum(rng, dim, place):
    """The moved problem solved (scipy, its duals recovered by lapcli), its column duals mapped
    back (the row duals follow from the assigned pairs): every reduced cost of the original is
    ≥ −tolerance, 10⁶ from the origin too, and the assignment's total is scipy's optimum of the
    original."""
    problem, frame, solved = solved_in_frame(rng, dim, place)
    v = frame.column_duals(solved.duals[1], problem.b, frame.moved.b)
    cost = distance_matrix(problem.a, problem.b, "sqeuclidean")
    assert min_reduced_cost(cost, solved.row_ind, solved.col_ind, v) >= -problem.tolerance()
    assert cost[solved.row_ind, solved.col_ind].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


@pytest.mark.parametrize("place", [PLACES[1], PLACES[4], PLACES[7], PLACES[8]])
def test_duals_within_the_frame_s_tolerance_stay_within_the_original_s(rng, place):
    """Column duals raised by up to half the frame's tolerance (reduced costs then ≥ −that, as an
    auction's last ε leaves them), mapped back: within the original problem's tolerance."""
    problem, frame, solved = solved_in_frame(rng, 2, place)
    loose = solved.duals[1] + rng.uniform(0.0, frame.tolerance() / 2, size=len(solved.duals[1]))
    v = frame.column_duals(loose, problem.b, frame.moved.b)
    cost = distance_matrix(problem.a, problem.b, "sqeuclidean")
    assert min_reduced_cost(cost, solved.row_ind, solved.col_ind, v) >= -problem.tolerance()


def test_the_frame_centres_both_sets_and_scales_the_columns(rng):
    """Both moved sets have mean 0 (the rows' mean taken from both), the rows their radius, the
    columns the rows' radius; the ratio is the columns' radius over the rows'."""
    a, b = sets(rng, 500, 2, 1e3, 5.0, 3.0)
    frame = onto_rows(prepare_points(a, b, "sqeuclidean"))

    def radius(points):
        return np.sqrt(((points - points.mean(axis=0)) ** 2).sum(axis=1).mean())

    np.testing.assert_allclose(frame.moved.a, a - a.mean(axis=0))
    np.testing.assert_allclose(frame.moved.b.mean(axis=0), 0.0, atol=1e-12)
    assert radius(frame.moved.b) == pytest.approx(radius(a), rel=1e-12)
    assert frame.ratio == pytest.approx(radius(b) / radius(a), rel=1e-12)
    np.testing.assert_array_equal(frame.centre, a.mean(axis=0))


def test_the_engine_puts_the_true_sets_back_in_its_orders(rng):
    """sap_points.true_points on NumPy arrays: the work's points, solved in the frame with the
    columns in tile order and the rows in their own order, get the original coordinates back in
    those orders, and the duals it returns prove the optimum on them (the certificate's passes
    read exactly these)."""
    from lapcli.cuda.points import DevicePoints
    from lapcli.engines.cuda.sap_points import true_points

    problem, frame, solved = solved_in_frame(rng, 2, (1e6, 0.5, 1.0), n=80)
    row_order, column_order = rng.permutation(80), rng.permutation(80)
    rows, columns = frame.moved.a[row_order], frame.moved.b[column_order]
    points = DevicePoints(rows, columns, rows.T.copy(), columns.T.copy(), "sqeuclidean", 2.0, 1.0, {}, 0.0)
    where = np.empty(80, dtype=np.int64)
    where[column_order] = np.arange(80)  # work column of each problem column
    v_work = solved.duals[1][column_order]
    cols_work = where[solved.col_ind[row_order]]
    v = true_points(frame, points, v_work, SimpleNamespace(order=column_order), row_order)
    np.testing.assert_array_equal(points.rows, problem.a[row_order])
    np.testing.assert_array_equal(points.columns_t, problem.b[column_order].T)
    cost = distance_matrix(points.rows, points.columns, "sqeuclidean")
    assert min_reduced_cost(cost, np.arange(80), cols_work, v) >= -problem.tolerance()


@pytest.mark.parametrize("case", ["euclidean", "maximize", "rectangular", "one place", "empty"])
def test_no_frame_where_the_answer_depends_on_where_the_sets_lie(rng, case):
    """Other metrics, maximised or rectangular problems have no such frame (their optimal
    assignments change as a set moves or scales), and sets whose points all lie at one place
    need none (every assignment is optimal)."""
    a, b = sets(rng, 30, 2, 0.0, 1.0, 1.0)
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


def test_no_frame_where_its_costs_would_overflow_but_the_true_ones_fit():
    """Scaled to the rows' radius, the columns can reach past float64 where the true costs fit (one
    far outlier beside tight sets; the largest true cost 1e308): solved as they are, with cdist's
    optimum and no overflow warning (this was refused as costs "too wide to mark forbidden entries")."""
    a = np.zeros((8, 2))
    a[:, 1] = np.arange(8) * 1e-3
    b = a.copy()
    a[0, 0], b[0, 0] = 1e154, -1.0
    assert onto_rows(prepare_points(a, b)) is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solution = lapcli.solve_points(a, b, solver="scipy")
    cost = distance_matrix(a, b, "sqeuclidean")
    optimum = cost[scipy_lsa(cost)].sum()
    assert np.isfinite(optimum) and "frame" not in solution.report.details
    assert solution.objective == pytest.approx(optimum, rel=1e-12)
    wide, narrow = np.random.default_rng(5).random((2, 50, 2)) * [[[5e153]], [[1e-3]]]
    with warnings.catch_warnings():  # the rows' radius past float64's range: no frame, and no warning
        warnings.simplefilter("error")
        assert onto_rows(prepare_points(wide, narrow)) is None


@pytest.mark.parametrize("solver", ["auto", "scipy", "numpy"])
@pytest.mark.parametrize("place", [PLACES[2], PLACES[4], PLACES[7]])
def test_the_host_matrix_route_solves_in_the_frame_and_certifies_the_true_costs(rng, solver, place):
    """solve_points through a matrix engine on the host: the cdist matrix is the frame's, and the
    answer carries the true costs' objective (scipy's optimum), duals feasible and tight on the
    true costs within the certificate's tolerance, and the frame in its report."""
    a, b = sets(rng, 300, 2, *place)
    solution = lapcli.solve_points(a, b, solver=solver, certify=True)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.report.certified and "centred on the rows' mean" in solution.report.details["frame"]
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    assert solution.report.objective == solution.objective
    u, v = solution.duals
    tolerance = solution.report.certificate["tolerance"]
    assert tolerance == prepare_points(a, b).tolerance()  # the point problem's (the frame's is smaller here)
    assert (cost - u[:, None] - v[None, :]).min() >= -tolerance
    rows, cols = solution.row_ind, solution.col_ind
    assert np.abs(cost[rows, cols] - u - v[cols]).max() <= tolerance
    # scipy and lapx give no duals: their recovery (on the frame's matrix) stays in the certificate's record
    assert ("duals_recovered_ms" in solution.report.certificate) == (solution.report.solver in ("scipy", "lapx"))


def test_the_matrix_built_on_the_gpu_is_the_frame_s(rng, monkeypatch):
    """auto's route that builds the cdist matrix on the GPU (lapcli.engines.auto.points_route),
    emulated with a host matrix: it is given the frame's sets, not the caller's, and the answer
    is certified on the true costs with their objective."""
    import lapcli.engines.auto
    import lapcli.pipeline_points

    given = []

    def built(sets, device):
        given.append(sets)
        return distance_matrix(sets.a, sets.b, "sqeuclidean")

    monkeypatch.setattr(lapcli.engines.auto, "points_route", lambda problem, solver: ("auto", "auto: test", True))
    monkeypatch.setattr(lapcli.pipeline_points, "_device_matrix", built)
    a, b = sets(rng, 300, 2, 1e4, 3.0, 2.0)
    solution = lapcli.solve_points(a, b, certify=True)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert len(given) == 1 and np.allclose(given[0].a.mean(axis=0), 0.0) and np.allclose(given[0].b.mean(axis=0), 0.0)
    assert solution.report.certified and "centred on the rows' mean" in solution.report.details["frame"]
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    u, v = solution.duals
    assert (cost - u[:, None] - v[None, :]).min() >= -solution.report.certificate["tolerance"]


def test_uncertified_answers_in_the_frame_still_report_the_true_objective(rng):
    """certify=False: no duals, and the objective is the true costs' (not the frame matrix's)."""
    a, b = sets(rng, 200, 2, 0.0, 3.0, 1.0)
    solution = lapcli.solve_points(a, b, solver="scipy", certify=False)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.duals is None and not solution.report.certified
    assert solution.objective == pytest.approx(cost[solution.row_ind, solution.col_ind].sum(), rel=1e-14)
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


@pytest.mark.parametrize("case", ["euclidean", "maximised euclidean", "rectangular", "maximised rectangle"])
def test_other_problems_solve_their_own_matrix(rng, case):
    """Other metrics and rectangular problems go through the matrix of the sets where they lie,
    minimised or maximised: no frame in the report, and the answer scipy's on that matrix
    (maximised sqeuclidean squares are mirrored: below)."""
    a, b = sets(rng, 200, 2, 0.0, 3.0, 1.0)
    metric, maximize = ("euclidean" if "euclidean" in case else "sqeuclidean"), "maximised" in case
    if "rectang" in case:
        b = np.vstack([b, b[:40] + 0.5])
    solution = lapcli.solve_points(a, b, metric, solver="scipy", maximize=maximize, certify=True)
    cost = distance_matrix(a, b, metric)
    assert "frame" not in solution.report.details and solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12)


@pytest.mark.parametrize("solver", ["auto", "scipy", "numpy"])
@pytest.mark.parametrize("place", [PLACES[0], PLACES[2], PLACES[5], PLACES[7], PLACES[9]])
def test_a_maximised_square_is_solved_mirrored_and_certified_on_the_true_costs(rng, solver, place):
    """maximize=True under sqeuclidean: the minimised problem of the columns mirrored
    (lapcli.points_frame.Mirror) is solved, and the answer carries the true costs' maximum
    (scipy's), duals with c − u − v ≤ tolerance everywhere and 0 on the pairs, and the mirror in
    its report; 10⁶ and 5·10⁶ from the origin too."""
    a, b = sets(rng, 250, 2, *place)
    solution = lapcli.solve_points(a, b, solver=solver, maximize=True, certify=True)
    cost = distance_matrix(a, b, "sqeuclidean")
    report = solution.report
    assert report.certified and report.maximize and "mirrored" in report.details["mirror"]
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=True)].sum(), rel=1e-12)
    assert report.objective == solution.objective
    u, v = solution.duals
    tolerance = report.certificate["tolerance"]
    # the mirrored sets' costs are of the true costs' size (both moved to the midpoint of the means)
    assert tolerance <= 4 * prepare_points(a, b, maximize=True).tolerance()
    assert (cost - u[:, None] - v[None, :]).max() <= tolerance
    assert np.abs(cost[solution.row_ind, solution.col_ind] - u - v[solution.col_ind]).max() <= tolerance


def test_the_mirror_s_duals_prove_the_maximum(rng):
    """Mirror.duals of the minimised problem's proved duals (scipy's, recovered by lapcli) are
    within the original problem's tolerance of proving its maximum, and the mirrored sets are
    centred on the midpoint of the two means."""
    a, b = sets(rng, 80, 3, 1e4, 2.0, 3.0)
    problem = prepare_points(a, b, maximize=True)
    mirror = mirrored(problem)
    assert np.allclose(mirror.centre, (a.mean(axis=0) + b.mean(axis=0)) / 2)
    assert np.allclose(mirror.minimised.b, mirror.centre - b) and not mirror.minimised.maximize
    least = lapcli.solve(distance_matrix(mirror.minimised.a, mirror.minimised.b, "sqeuclidean"), solver="scipy",
                         certify=True)
    u, v = mirror.duals(*least.duals)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert (cost - u[:, None] - v[None, :]).max() <= problem.tolerance()
    assert cost[least.row_ind, least.col_ind].sum() == pytest.approx(cost[scipy_lsa(cost, maximize=True)].sum(),
                                                                      rel=1e-12)


def test_an_uncertified_maximum_reports_the_true_objective(rng):
    a, b = sets(rng, 200, 2, 0.0, 3.0, 1.0)
    solution = lapcli.solve_points(a, b, solver="scipy", maximize=True, certify=False)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.duals is None and not solution.report.certified and solution.report.maximize
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=True)].sum(), rel=1e-12)


@pytest.mark.parametrize("case", ["euclidean", "minimised", "rectangular"])
def test_no_mirror_for_other_problems(rng, case):
    a, b = sets(rng, 120, 2, 0.0, 1.0, 1.0)
    metric = "euclidean" if case == "euclidean" else "sqeuclidean"
    if case == "rectangular":
        b = np.vstack([b, b[:30] + 0.5])
    maximize = case != "minimised"
    assert mirrored(prepare_points(a, b, metric, maximize=maximize)) is None
    solution = lapcli.solve_points(a, b, metric, solver="scipy", maximize=maximize, certify=True)
    cost = distance_matrix(a, b, metric)
    assert "mirror" not in solution.report.details and solution.report.maximize == maximize
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12)


@pytest.mark.parametrize("maximize", [True, False])
def test_the_mirror_s_and_the_frame_s_certificate_keep_the_time_limit(rng, maximize):
    """The pass over the true costs after the minimised solve (the mirror's) or the moved sets' (the
    frame's) counts against the same time limit (scipy, which has none of its own, solves; the pass
    then stops at its first chunk, or does not begin). The frame's ran to its end: a minimised
    sqeuclidean solve with certify=True came back certified past any limit, a maximised one did not."""
    a, b = sets(rng, 300, 2, 0.0, 3.0, 1.0)
    with pytest.raises(SolverError, match="certificate's pass ran past the time limit: 0 of 300 rows read"):
        lapcli.solve_points(a, b, solver="scipy", maximize=maximize, certify=True, timeout=1e-6)


@pytest.mark.parametrize("case", ["mirrored", "apart", "frame"])
def test_an_answer_found_is_kept_when_its_check_passes_the_time_limit(rng, case):
    """By default the pass over the true costs that finds the time limit passed (scipy, which has none,
    spent it) leaves the answer found, not certified and without duals, its report saying why."""
    a, b = sets(rng, 300, 2, 0.0, 3.0, 1.0)
    metric, maximize = {"mirrored": ("sqeuclidean", True), "apart": ("cityblock", False),
                        "frame": ("sqeuclidean", False)}[case]
    if case == "apart":
        b[:, 0] += 10.0
    solution = lapcli.solve_points(a, b, metric, solver="scipy", maximize=maximize, timeout=1e-6)
    cost = distance_matrix(a, b, metric)
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12)
    assert not solution.report.certified and solution.duals is None
    assert "certificate's pass ran past the time limit: 0 of 300 rows read" in solution.report.certificate["why"]


@pytest.mark.parametrize("shape", [(300, 300), (300, 301)])
def test_a_cdist_matrix_scipy_solves_keeps_its_certificate_past_the_limit(rng, shape):
    """Sets neither moved nor made easier (euclidean; a rectangle) are solved as their cdist matrix,
    certified with it as a matrix is: scipy runs to its end, certificate included, whatever the
    limit (the help of --timeout says so beside the passes that stop)."""
    a, b = sets(rng, shape[0], 2, 0.0, 3.0, 1.0)[0], sets(rng, shape[1], 2, 0.0, 3.0, 1.0)[1]
    solution = lapcli.solve_points(a, b, "euclidean", solver="scipy", certify=True, timeout=1e-6)
    assert solution.report.certified and solution.duals is not None and "frame" not in solution.report.details


def test_the_mirror_s_report_names_whose_frame_it_is(rng):
    a, b = sets(rng, 200, 2, 0.0, 3.0, 1.0)
    details = lapcli.solve_points(a, b, maximize=True).report.details
    assert details["frame"].startswith("the mirrored sets: both sets centred")


@pytest.mark.parametrize("case", ["on a line", "near float64's largest"])
def test_no_mirror_where_sorting_serves_or_the_mirror_would_overflow(rng, case):
    """1-D sets are sorted maximised as they are (one certificate pass, not two); coordinates near
    float64's largest would overflow the mirror's means or costs: solved as they are."""
    if case == "on a line":
        a, b = rng.random((300, 1)), rng.random((300, 1)) + 2.0
    else:
        a = b = np.full((3, 2), 1.7e308)
    problem = prepare_points(a, b, maximize=True)
    assert mirrored(problem) is None
    solution = lapcli.solve_points(a, b, maximize=True, certify=True)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.report.certified and "mirror" not in solution.report.details
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=True)].sum(), rel=1e-12)
    if case == "on a line":
        assert solution.report.solver == "sorted"
