"""Cityblock sets apart in some coordinates (lapcli.points_frame.Separation) with a GPU: the
reduced sets take their GPU route, and the true costs are certified on the device, NumPy and CuPy
coordinates alike (pytest -m gpu)."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.arrays import host
from lapcli.points import distance_matrix

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("shift", [(3.0, 3.0), (0.3, -2.0), (2.0, 0.5, 0.2)], ids=["everywhere", "in y", "3-D in x"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("library", ["numpy", "cupy"])
def test_sets_apart_are_certified_on_the_device(rng, shift, maximize, library):
    """2,100 points (4.41 M pairs, above the host pass's HOST_PASS_UP_TO): scipy's optimum, the
    true costs' certificate read on the device."""
    a = rng.random((2100, len(shift)))
    b = rng.random((2100, len(shift))) + np.asarray(shift)
    if library == "cupy":
        import cupy

        solution = lapcli.solve_points(cupy.asarray(a), cupy.asarray(b), "cityblock", maximize=maximize)
    else:
        solution = lapcli.solve_points(a, b, "cityblock", maximize=maximize)
    cost = distance_matrix(a, b, "cityblock")
    assert "separated" in solution.report.details and solution.report.certified
    assert solution.report.certificate["where"] == "device"
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12)
    assert type(solution.duals[0]) is type(solution.row_ind)  # the duals where the assignment is
    u, v = (np.asarray(host(dual)) for dual in solution.duals)
    slack = (cost - u[:, None] - v[None, :]) * (-1 if maximize else 1)
    assert slack.min() >= -solution.report.certificate["tolerance"]


def test_a_large_square_apart_everywhere_is_sorted_and_certified(rng):
    """65,536 points moved by (3, 3), which the point auction did not finish in 10 s (H200): every
    assignment is optimal; the answer comes from one coordinate sorted and is certified on all
    n² true costs on the device."""
    a, b = rng.random((65_536, 2)), rng.random((65_536, 2)) + 3.0
    solution = lapcli.solve_points(a, b, "cityblock", timeout=30)
    assert solution.report.solver == "sorted" and solution.report.certified
    assert solution.report.certificate["where"] == "device"
    assert solution.objective == pytest.approx((b.sum() - a.sum()), rel=1e-12)
