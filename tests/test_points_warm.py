"""The point auction's warm start on the CPU: how far its sample's optimum moves points
(lapcli.engines.cuda.sap_warm.reach), which decides whether the coarse phase's ε grows with n."""

import numpy as np
import pytest

from lapcli.engines.cuda import sap_warm
from lapcli.generate import generate_points
from .helpers import twin_sample_reach


def sample_reach(kind: str, seed: int, n: int = 16_384) -> float:
    """The reach of the warm start's sample of two sets of ``n`` 2-D points (rows seed 2·seed+1,
    columns 2·seed+2, as docs/points.md's sets): every stride-th point of each along Morton's
    curve (its twin), the sample's squared distances solved by scipy."""
    return twin_sample_reach(generate_points(n, 2, kind=kind, seed=2 * seed + 1),
                             generate_points(n, 2, kind=kind, seed=2 * seed + 2))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_clustered_sample_moves_points_far_and_a_uniform_one_does_not(seed):
    """Two uniform sets' optimum moves each point a few times its nearest neighbour's distance;
    two samples of one Gaussian mixture move a region's surplus to another region (16,384 points,
    a sample of 1,024: uniform 8.5-11.4, clustered 124-609 here; FAR_REACH is 32)."""
    uniform, clustered = sample_reach("uniform", seed), sample_reach("clustered", seed)
    assert uniform < sap_warm.FAR_REACH / 2 and not sap_warm.WarmStart(None, 0, uniform).moves_far
    assert clustered > 2 * sap_warm.FAR_REACH and sap_warm.WarmStart(None, 0, clustered).moves_far


def test_reach_is_a_high_quantile_of_the_matched_costs_over_the_median_least_cost():
    """reach: the FAR_QUANTILE (99th percentile) of the assignment's costs over the median of the
    rows' least costs; inf where that median is 0 and the matched costs are not, 0 where both are."""
    rng = np.random.default_rng(3)
    n = 200
    costs = rng.uniform(1.0, 2.0, (n, n))
    col_of_row = rng.permutation(n)
    costs[np.arange(n), col_of_row] = np.linspace(1.0, 100.0, n)  # matched: 1 to 100
    least = costs.min(axis=1)
    expected = np.percentile(costs[np.arange(n), col_of_row], 99.0) / np.median(least)
    assert sap_warm.reach(costs, col_of_row) == pytest.approx(expected, rel=1e-12)
    assert sap_warm.reach(costs, col_of_row) > 98.0 / 1.5  # the matched costs' top, not their mean
    costs[:, 0] = 0.0  # every row's least cost is 0
    assert sap_warm.reach(costs, col_of_row) == np.inf
    assert sap_warm.reach(np.zeros((4, 4)), np.arange(4)) == 0.0
