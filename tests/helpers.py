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


def late_round_state(rng, rows, columns, metric, p=2.0):
    """A late round of the point auction on ``rows`` × ``columns`` (float64, the columns in
    Morton's order): the optimal column duals (lapcli.solve, certified), shifted above 0 (a shift
    changes no rule's outcome; the engines normalise duals apart, and a bound that left out a
    tile's dual would then skip tiles it must read), and the optimal assignment with the columns of
    a row and the next along Morton's curve swapped for 60 % of the pairs, so that those rows hold
    a column a little above their best: (reduced costs c − v, v, col_of_row)."""
    import lapcli
    from lapcli.points import distance_matrix
    from lapcli.twins.tiles import spatial_order

    n = len(rows)
    cost = distance_matrix(rows, columns, metric, p)
    solution = lapcli.solve(cost, certify=True)
    v = solution.duals[1] - solution.duals[1].min() + 1.0
    col_of_row = np.empty(n, dtype=np.int32)
    col_of_row[solution.row_ind] = solution.col_ind
    for first, second in spatial_order(rows)[:n - n % 2].reshape(-1, 2)[rng.random(n // 2) < 0.6]:
        col_of_row[[first, second]] = col_of_row[[second, first]]
    return cost - v[None, :], v, col_of_row


def eps_between_gaps(gaps) -> float:
    """An ε whose 2ε lies halfway between two of the distinct positive ``gaps`` (a row's pair above
    its best), the middle two where there are several: some rows are released and some kept, and
    no gap ties 2ε (integer points give few distinct gaps)."""
    distinct = np.unique(gaps[gaps > 0])
    if len(distinct) == 1:
        return distinct[0] / 4
    middle = max(1, len(distinct) // 2)
    return (distinct[middle - 1] + distinct[middle]) / 4


def twin_sample_reach(a, b, metric="sqeuclidean"):
    """The point auction's warm-start sample of the square sets ``a`` and ``b`` as its CPU twin
    builds it (both sets in the rows' frame where the engine moves them: lapcli.points_frame; then
    every sap_warm.stride-th point of each along lapcli.twins.tiles.spatial_order), its costs
    solved by scipy: sap_warm.reach of that optimum."""
    from lapcli.engines.cuda import sap_warm
    from lapcli.points import distance_matrix, prepare_points
    from lapcli.points_frame import onto_rows
    from lapcli.twins.tiles import spatial_order

    frame = onto_rows(prepare_points(a, b, metric))
    if frame is not None:
        a, b = frame.moved.a, frame.moved.b
    every = sap_warm.stride(len(a))
    costs = distance_matrix(a[spatial_order(a)][::every], b[spatial_order(b)][::every], metric)
    return sap_warm.reach(costs, scipy_lsa(costs)[1])
