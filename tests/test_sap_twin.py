"""The NumPy twin of engine cuda-sap (auction start, then shortest augmenting paths from the free
rows) against scipy, on the CPU."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from lapcli.engines import registry
from lapcli.twins import reference_stack
from lapcli.twins import sap_twin as twin
from lapcli.engines.cpu.numpy_hungarian import auction_start
from lapcli.generate import generate

from .helpers import uniform_costs


def assert_optimal_with_duals(cost, columns, u, v):
    rows, reference = linear_sum_assignment(cost)
    n = cost.shape[0]
    c = cost.astype(np.float64)
    assert np.unique(columns).size == n
    assert c[np.arange(n), columns].sum() == pytest.approx(c[rows, reference].sum(), abs=1e-9)
    reduced = c - u[:, None] - v[None, :]
    assert reduced.min() >= -1e-9
    assert np.abs(reduced[np.arange(n), columns]).max() <= 1e-9


@pytest.mark.parametrize("kind,range_factor,dtype", [("uniform", 0.1, "int32"), ("uniform", 1, "int32"),
                                                     ("uniform", 1000, "int64"), ("float", 1, "float32"),
                                                     ("geometric", 1, "float64")])
def test_twin_is_optimal_and_certified(rng, kind, range_factor, dtype):
    for n in (1, 2, 3, 17, 64, 150):
        cost = generate(n, range_factor=range_factor, kind=kind, dtype=dtype, seed=int(rng.integers(2**31)))
        columns, u, v, rounds, searches = twin(cost)
        assert_optimal_with_duals(cost, columns, u, v)
        assert 0 <= searches <= n


def test_searches_are_the_rows_the_auction_left_free(rng):
    cost = uniform_costs(rng, 120, 120, 100, dtype=np.int32)
    _, _, stars, _, rounds = auction_start(cost.astype(np.int64))
    columns, _, _, twin_rounds, searches = twin(cost)
    assert twin_rounds == rounds and searches == int((stars < 0).sum()) > 0


def test_a_warm_start_is_only_searched_from_its_free_rows(rng):
    """From an optimal (u, v, assignment) with one row freed, one search restores an optimum."""
    n = 40
    cost = uniform_costs(rng, n, n, 10, dtype=np.int64)
    columns, _, v, _ = reference_stack(cost[None])
    start = columns.copy()
    start[0, 7] = -1
    again, _, v_again, _ = reference_stack(cost[None], warm_start=(v.copy(), start))
    rows, reference = linear_sum_assignment(cost)
    assert cost[np.arange(n), again[0]].sum() == cost[rows, reference].sum()
    assert np.array_equal(v_again, v)  # the freed column is the cheapest at reduced cost 0: no dual moves
    assert again[0, 7] == columns[0, 7]


def test_a_warm_start_keeps_its_assigned_rows():
    """All-equal costs: a cold search gives row i column i; from a warm start that gives row i
    column i + 1 (row 0 free) the assigned rows keep their columns and row 0 takes the one left."""
    n = 12
    costs = np.zeros((2, n, n), dtype=np.int32)
    start = np.tile(np.r_[-1, np.arange(2, n), 0].astype(np.int32), (2, 1))
    columns, u, v, _ = reference_stack(costs, warm_start=(np.zeros((2, n), np.int64), start))
    assert np.array_equal(columns, np.tile(np.r_[1, np.arange(2, n), 0], (2, 1)))
    assert np.array_equal(reference_stack(costs)[0], np.tile(np.arange(n), (2, 1)))


def test_one_row_has_no_auction():
    columns, u, v, rounds, searches = twin(np.array([[7]], dtype=np.int32))
    assert (columns.tolist(), u.tolist(), v.tolist(), rounds, searches) == ([0], [0], [7], 0, 0)  # column reduction


def test_the_engine_is_registered_with_its_limits():
    engine = registry.get("cuda-sap")
    assert engine.capabilities.device == "cuda" and engine.capabilities.duals
    from lapcli.cuda import sap_cluster

    hopper_shared_per_block = 227 * 1024  # opt-in shared memory per block on the H100 and H200
    assert engine.capabilities.max_columns == sap_cluster.max_columns(hopper_shared_per_block) == 55296
    assert "cuda-sap" in registry.solver_choices(batch=False)
