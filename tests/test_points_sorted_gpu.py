"""Engine ``sorted`` with a GPU: its certificate streams all n² costs through the point kernels
(lapcli.cuda.points.row_min), NumPy and CuPy coordinates alike (pytest -m gpu)."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.arrays import host
from lapcli import points_certificate
from lapcli.points import distance_matrix, prepare_points

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("metric", ["sqeuclidean", "cityblock"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("library", ["numpy", "cupy"])
def test_sorted_answers_are_certified_on_the_device(rng, metric, maximize, library):
    """2,100 points (4.41 M pairs, above the host pass's HOST_PASS_UP_TO): scipy's optimum, the
    certificate's pass on the device."""
    a, b = rng.normal(size=(2100, 1)), rng.random((2100, 1)) * 4 - 1
    if library == "cupy":
        import cupy

        solution = lapcli.solve_points(cupy.asarray(a), cupy.asarray(b), metric, maximize=maximize)
    else:
        solution = lapcli.solve_points(a, b, metric, maximize=maximize)
    cost = distance_matrix(a, b, metric)
    assert solution.report.solver == "sorted" and solution.report.certified
    assert solution.report.certificate["where"] == "device"
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12)
    u, v = (np.asarray(host(dual)) for dual in solution.duals)
    slack = (cost - u[:, None] - v[None, :]) * (-1 if maximize else 1)
    assert slack.min() >= -solution.report.certificate["tolerance"]


@pytest.mark.parametrize("metric", ["sqeuclidean", "chebyshev", "cosine"])
def test_the_device_pass_reads_what_the_host_pass_reads(rng, metric):
    """The least reduced cost of duals moved off the optimum (so that it is negative somewhere):
    the device's streamed pass and the host's row chunks agree."""
    a, b = rng.normal(size=(2000, 1)), rng.normal(size=(2000, 1))
    problem = prepare_points(a, b, metric)
    u, v = rng.normal(size=2000), rng.normal(size=2000)
    x, y = (np.asarray(host(side), dtype=np.float64) for side in (problem.rows, problem.columns))
    on_device, _compile_ms = points_certificate._device_least_slack(problem, u, v, None)
    on_host = points_certificate._host_least_slack(problem, x, y, u, v, None, 0.0)
    assert on_device == pytest.approx(on_host, rel=1e-12, abs=1e-12)


def test_a_million_points_on_a_line(rng):
    """2^20 uniform 1-D points: the sorted pairs, certified by one device pass over 2^40 costs,
    the same objective as the fsum of the sorted pairs' costs computed here."""
    n = 1 << 20
    a, b = rng.random((n, 1)), rng.random((n, 1)) + 0.25
    solution = lapcli.solve_points(a, b, timeout=120)
    assert solution.report.solver == "sorted" and solution.report.certified
    pairs = (np.sort(a[:, 0]) - np.sort(b[:, 0])) ** 2
    assert solution.objective == pytest.approx(pairs.sum(), rel=1e-12)


def test_the_point_auction_agrees_on_a_line(rng):
    """8,192 1-D points: the point auction (solver cuda-sap, certified on its own) finds the same
    optimum as the sorted pairs."""
    a, b = rng.random((8192, 1)), rng.random((8192, 1))
    by_sort = lapcli.solve_points(a, b)
    by_auction = lapcli.solve_points(a, b, solver="cuda-sap", timeout=60)
    assert by_sort.report.solver == "sorted" and by_auction.report.certified
    assert by_sort.objective == pytest.approx(by_auction.objective, rel=1e-12)


@pytest.mark.parametrize("maximize", [False, True])
def test_rectangles_are_certified_on_the_device(rng, maximize):
    """2,100 × 3,000 points (6.3 M pairs): the band programme's pairs, scipy's optimum, the
    certificate's pass on the device."""
    a, b = rng.normal(size=(2100, 1)), rng.random((3000, 1)) * 4 - 1
    solution = lapcli.solve_points(a, b, "cityblock", maximize=maximize)
    cost = distance_matrix(a, b, "cityblock")
    assert solution.report.solver == "sorted" and solution.report.certified
    assert solution.report.certificate["where"] == "device"
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12)
