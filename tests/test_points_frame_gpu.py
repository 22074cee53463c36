"""Squared distances between sets apart, of other sizes, or a moved copy: the point auction solves
them in the rows' frame (lapcli.points_frame) and certifies the answer on the true costs
(pytest -m gpu)."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.arrays import host
from lapcli.points import distance_matrix, prepare_points

pytestmark = pytest.mark.gpu


def placed(rng, n, place):
    """Rows U[0, 1)², and columns: another such set moved by (0.5, 0.5) or scaled by 2, a Gaussian
    mixture far away, or a permuted copy of the rows with noise, moved by (1, 1)."""
    a = rng.random((n, 2))
    if place == "moved":
        return a, rng.random((n, 2)) + 0.5
    if place == "scaled":
        return a, 2.0 * rng.random((n, 2))
    if place == "far mixture":
        centres = rng.normal(scale=5.0, size=(8, 2)) + 100.0
        return a, centres[rng.integers(0, 8, n)] + rng.normal(scale=0.3, size=(n, 2))
    if place == "far from the origin":  # both sets 10^6 away, as coordinates in metres are
        return a + 1e6, rng.random((n, 2)) + 1e6 + 0.5
    return a, a[rng.permutation(n)] + 1e-3 * rng.normal(size=(n, 2)) + 1.0


@pytest.mark.parametrize("place", ["moved", "scaled", "far mixture", "copy", "far from the origin"])
@pytest.mark.parametrize("library", ["numpy", "cupy"])
@pytest.mark.parametrize("solver", ["cuda-sap", "auto"])
def test_sets_elsewhere_are_solved_in_the_rows_frame(rng, place, library, solver):
    """1,500 points (the auction's size; scipy on 4,096 such points takes a minute), by the point
    auction and by auto (the frame's cdist matrix solved on the GPU, the true costs' certificate
    there too): the report names the frame, the answer is certified on the true costs, and its
    objective is scipy's on the dense matrix; from NumPy and CuPy coordinates alike."""
    a, b = placed(rng, 1500, place)
    if library == "cupy":
        import cupy

        solution = lapcli.solve_points(cupy.asarray(a), cupy.asarray(b), solver=solver, timeout=60)
    else:
        solution = lapcli.solve_points(a, b, solver=solver, timeout=60)
    assert "centred on the rows' mean" in solution.report.details["frame"]
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.report.certified and solution.report.certificate["where"] == "device"
    if library == "numpy":  # host coordinates, host answers
        assert all(isinstance(x, np.ndarray) for x in (solution.row_ind, solution.col_ind, *solution.duals))
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    # the duals are the true costs' (the certificate read the caller's coordinates, not the frame's)
    u, v = (np.asarray(host(dual)) for dual in solution.duals)
    tolerance = prepare_points(a, b).tolerance()
    rows, cols = host(solution.row_ind), host(solution.col_ind)
    assert (cost - u[:, None] - v[None, :]).min() >= -tolerance
    assert np.abs(cost[rows, cols] - u[rows] - v[cols]).max() <= tolerance


def test_a_moved_noisy_copy_of_65536_points_is_matched_back(rng):
    """The columns a permutation of the rows moved by (1, 1), with noise far below the points'
    spacing: the optimum undoes the permutation (past 40 s on an H200 when solved where the sets
    lie: every row's candidates were its near columns, none of them its partner)."""
    n = 65_536
    a = rng.random((n, 2))
    order = rng.permutation(n)
    b = a[order] + 1e-6 * rng.normal(size=(n, 2)) + 1.0
    solution = lapcli.solve_points(a, b, solver="cuda-sap", timeout=60)
    assert solution.report.certified
    partner = np.empty(n, dtype=np.int64)
    partner[order] = np.arange(n)
    assert np.array_equal(solution.col_ind, partner)


@pytest.mark.parametrize("place", ["moved", "scaled", "copy", "far from the origin"])
@pytest.mark.parametrize("library", ["numpy", "cupy"])
def test_auto_s_matrix_on_the_gpu_is_the_frame_s(rng, place, library):
    """4,096 points, which auto solves as their cdist matrix built on the GPU (Hopper): the matrix
    is the frame's (where the sets lay, moved by (3, 3), it took 13.8 s on an H200; in the frame
    0.05 s), the answer certified on the true costs, its objective the point auction's (certified
    on its own; scipy on 4,096 such points takes minutes)."""
    from lapcli.engines.auto import points_matrix_on_device

    a, b = placed(rng, 4096, place)
    if not points_matrix_on_device(prepare_points(a, b)):
        pytest.skip("auto does not build the matrix on this GPU")
    if library == "cupy":
        import cupy

        solution = lapcli.solve_points(cupy.asarray(a), cupy.asarray(b), timeout=10)
    else:
        solution = lapcli.solve_points(a, b, timeout=10)
    details = solution.report.details
    assert "built on the GPU" in details["costs"] and "centred on the rows' mean" in details["frame"]
    assert solution.report.certified
    by_auction = lapcli.solve_points(a, b, solver="cuda-sap", timeout=60)
    assert solution.objective == pytest.approx(by_auction.objective, rel=1e-12)
    cost = distance_matrix(a, b, "sqeuclidean")
    u, v = (np.asarray(host(dual)) for dual in solution.duals)
    rows, cols = host(solution.row_ind), host(solution.col_ind)
    tolerance = solution.report.certificate["tolerance"]
    assert (cost - u[:, None] - v[None, :]).min() >= -tolerance
    assert np.abs(cost[rows, cols] - u[rows] - v[cols]).max() <= tolerance


@pytest.mark.parametrize("solver", ["cuda-sap", "auto"])
@pytest.mark.parametrize("library", ["numpy", "cupy"])
def test_a_maximised_square_is_mirrored_and_certified_on_the_device(rng, solver, library):
    """2,100 points maximised (4.4 M pairs: the true costs' certificate streams on the device): the
    minimised mirror (lapcli.points_frame.Mirror) solved by the point auction or by auto's matrix,
    scipy's maximum, duals with c − u − v ≤ tolerance everywhere."""
    a, b = placed(rng, 2100, "moved")
    if library == "cupy":
        import cupy

        solution = lapcli.solve_points(cupy.asarray(a), cupy.asarray(b), solver=solver, maximize=True, timeout=60)
    else:
        solution = lapcli.solve_points(a, b, solver=solver, maximize=True, timeout=60)
    report = solution.report
    assert report.maximize and "mirrored" in report.details["mirror"]
    assert report.certified and report.certificate["where"] == "device"
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=True)].sum(), rel=1e-12)
    # the duals in the library the route returned the assignment in
    assert all(type(dual).__module__.split(".")[0] == type(solution.row_ind).__module__.split(".")[0]
               for dual in solution.duals)
    u, v = (np.asarray(host(dual)) for dual in solution.duals)
    assert (cost - u[:, None] - v[None, :]).max() <= report.certificate["tolerance"]


def test_8192_maximised_points_take_the_auction(rng):
    """8,192 uniform points maximised: the mirror's auction well inside 10 s (the maximised square
    went to the searches before: 33 s on an H100)."""
    a, b = rng.random((8192, 2)), rng.random((8192, 2))
    solution = lapcli.solve_points(a, b, maximize=True, timeout=10)
    assert solution.report.certified and "mirror" in solution.report.details


def test_the_device_pass_over_the_true_costs_does_not_begin_past_the_time_limit(rng):
    """The host pass stops between chunks; the device pass (one launch) ran whatever the time: it is
    not begun past the limit, which the mirrored and separated routes then report."""
    import time

    from lapcli.errors import SolverError
    from lapcli.points_certificate import HOST_PASS_UP_TO, certify_points, on_device

    n = int(HOST_PASS_UP_TO**0.5) + 8  # past the host pass: the device's
    problem = prepare_points(rng.random((n, 2)), rng.random((n, 2)), "sqeuclidean")
    assert on_device(problem)
    zeros, columns = np.zeros(n), np.arange(n)
    with pytest.raises(SolverError, match=f"certificate's pass ran past the time limit: 0 of {n:,} rows read"):
        certify_points(problem, columns, zeros, zeros, 1e-9, "test", timeout=1.0, began=time.perf_counter() - 2.0)
