"""Reference checks against scipy used by the CPU and GPU tests."""

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from lapcli.problem import objective_tolerance

RANGES = (0.001, 0.01, 0.1, 1, 10, 100, 1000)


def uniform_costs(rng, n, m, range_factor, dtype=np.int64):
    """Integers uniform in [0, max(1, round(R·n))) — the papers' convention."""
    high = max(1, round(range_factor * n))
    return rng.integers(0, high, size=(n, m)).astype(dtype)


def assert_matches_scipy(solution, cost, maximize=False):
    """Same objective as scipy, a valid assignment of min(n, m) pairs, rows sorted."""
    ref_rows, ref_cols = scipy_lsa(cost, maximize=maximize)
    expected = cost[ref_rows, ref_cols].astype(np.float64 if cost.dtype.kind == "f" else object).sum()
    rows, cols = np.asarray(solution.row_ind), np.asarray(solution.col_ind)
    assert len(rows) == len(ref_rows) == min(cost.shape)
    assert np.all(np.diff(rows) > 0), "row indices must be sorted and distinct"
    assert np.unique(cols).size == cols.size, "a column is assigned twice"
    got = cost[rows, cols].astype(np.float64 if cost.dtype.kind == "f" else object).sum()
    if cost.dtype.kind in "biu":
        assert int(got) == int(expected) == solution.objective
    else:
        tol = objective_tolerance(cost)
        assert abs(float(got) - float(expected)) <= tol, (got, expected, tol)
        assert abs(solution.objective - float(expected)) <= tol
