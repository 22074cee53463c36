"""lapcli.duals.recover: duals from any optimal assignment, and a negative cycle for any other,
on matrices large enough that its rounds relax only the nearer half of the fallen columns."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli import duals


def _col_of_row(cost):
    rows, cols = scipy_lsa(cost)
    col_of_row = np.empty(cost.shape[0], dtype=np.int64)
    col_of_row[rows] = cols
    return col_of_row


def _points(rng, n, m):
    a, b = rng.random((n, 2)), rng.random((m, 2))
    return ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)


@pytest.mark.parametrize("all_fallen_below", [0, 64, 10**9])  # nearer halves always, as shipped, never
@pytest.mark.parametrize("kind", ["uniform", "points", "integers", "wide"])
def test_recovered_duals_prove_the_optimum(rng, monkeypatch, all_fallen_below, kind):
    monkeypatch.setattr(duals, "_ALL_FALLEN_BELOW", all_fallen_below)
    n, m = (300, 300) if kind != "wide" else (200, 320)
    cost = {"uniform": lambda: rng.random((n, m)), "points": lambda: _points(rng, n, m),
            "integers": lambda: rng.integers(-(2**40), 2**40, (n, m)),
            "wide": lambda: rng.random((n, m))}[kind]()
    col_of_row = _col_of_row(cost)
    u, v = duals.recover(cost, col_of_row)
    if cost.dtype.kind == "i":
        assert u.dtype == v.dtype == np.int64
        reduced = cost - u[:, None] - v[None, :]
        assert reduced.min() == 0 and not reduced[np.arange(n), col_of_row].any()  # exact
    else:
        reduced = cost - u[:, None] - v[None, :]
        assert reduced.min() >= -1e-12 and np.abs(reduced[np.arange(n), col_of_row]).max() <= 1e-12
    if m > n:  # free columns keep v = 0, the others v <= 0
        free = np.setdiff1d(np.arange(m), col_of_row)
        assert not v[free].any() and (v <= 0).all()


@pytest.mark.parametrize("all_fallen_below", [0, 64, 10**9])
def test_a_suboptimal_assignment_has_no_duals(rng, monkeypatch, all_fallen_below):
    monkeypatch.setattr(duals, "_ALL_FALLEN_BELOW", all_fallen_below)
    cost = rng.integers(0, 1000, (256, 256))
    col_of_row = _col_of_row(cost)
    col_of_row[[3, 200]] = col_of_row[[200, 3]]  # still a permutation; optimal only by a tie
    if cost[np.arange(256), col_of_row].sum() == cost[np.arange(256), _col_of_row(cost)].sum():
        pytest.skip("the swap happened to tie")
    with pytest.raises(ValueError, match="negative cycle"):
        duals.recover(cost, col_of_row)


def test_the_budget_counts_relaxed_columns(rng):
    cost = _points(rng, 300, 300)
    with pytest.raises(duals.TooCostly):
        duals.recover(cost, _col_of_row(cost), budget_passes=0.5)


@pytest.mark.parametrize("seed", range(5))
def test_exactly_tied_float_assignments_certify(seed):
    """|x − y| between 1-D points: many pairings cost the same in exact arithmetic, and their float
    sums differ by ulps, so the residual graph of an optimal answer has cycles a few ulps below
    zero. Recovery must not call that a negative cycle (it raised SolverError on correct answers)."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=40), rng.normal(size=40)
    cost = np.abs(x[:, None] - y[None, :])
    solution = lapcli.solve(cost, certify=True)
    assert solution.report.certified
    rows, cols = scipy_lsa(cost)
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12)


@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("solver, dtype", [("scipy", "int64"), ("lapx", "int64")])
def test_recovered_duals_hold_in_the_callers_matrix(rng, solver, dtype, maximize):
    """Square integers whose rows still span ~2^60 after the row reduction get their columns reduced
    too: the duals an engine without any are recovered on that work, and map back to the caller's
    matrix only with both offsets added back (compared exactly, in Python ints)."""
    if solver == "lapx":
        pytest.importorskip("lap")
    cost = (rng.integers(0, 2**58, 6)[None, :] + rng.integers(0, 100, (6, 6))).astype(np.int64)
    solution = lapcli.solve(cost, solver=solver, dtype=dtype, maximize=maximize, certify=True)
    assert solution.report.certified
    u, v = (np.asarray(d).astype(object) for d in solution.duals)
    reduced = cost.astype(object) - u[:, None] - v[None, :]
    sign = -1 if maximize else 1
    assert min(sign * x for x in reduced.ravel()) == 0
    assert not reduced[solution.row_ind, solution.col_ind].any()
