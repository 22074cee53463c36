"""Engine cuda-sap (the auction start, then shortest augmenting paths) against scipy and its
NumPy twin (run on a GPU machine: pytest -m gpu)."""

import numpy as np
import pytest

from lapcli.cuda.batch_lap import LAYOUTS

import lapcli
from lapcli.twins import sap_twin as twin
from lapcli.generate import generate

from .helpers import RANGES, assert_matches_scipy, uniform_costs

pytestmark = pytest.mark.gpu

SIZES = [1, 2, 3, 5, 8, 31, 64, 97, 128, 255, 256, 500, 512, 513, 1000, 1024, 1500, 2048]


def test_random_integer_and_float_matrices_match_scipy(rng):
    solved = 0
    for n in SIZES:
        for range_factor in RANGES[::2]:
            for dtype in ("int32", "int64", "float32", "float64"):
                cost = uniform_costs(rng, n, n, range_factor)
                if dtype.startswith("float"):
                    cost = (cost + rng.random((n, n))).astype(dtype)
                solution = lapcli.solve(cost, solver="cuda-sap", dtype=dtype)
                assert solution.report.dtype == dtype and solution.report.certified
                assert_matches_scipy(solution, cost)
                solved += 1
    assert solved >= 250


@pytest.mark.parametrize("kind", ["geometric", "float", "uniform"])
def test_geometric_float_and_uniform_costs_match_scipy(rng, kind):
    for n in (700, 1024, 2048):
        cost = generate(n, range_factor=100, kind=kind, seed=int(rng.integers(2**31)))
        assert_matches_scipy(lapcli.solve(cost, solver="cuda-sap"), cost)


def test_integer_answers_and_steps_equal_the_twins(rng):
    """Same bids, ties and stopping rule in the auction, same search order and tie-break after it:
    the kernel's columns, duals, rounds and searches are the twin's, exactly."""
    for n, range_factor in ((60, 0.1), (200, 1), (300, 100), (517, 1000)):
        cost = uniform_costs(rng, n, n, range_factor, dtype=np.int32)
        columns, u, v, rounds, searches = twin(cost)
        solution = lapcli.solve(cost, solver="cuda-sap")
        assert np.array_equal(solution.col_ind, columns)
        assert np.array_equal(solution.duals[0], u) and np.array_equal(solution.duals[1], v)
        steps = {s.step: s.count for s in solution.report.steps}
        assert steps == {1: rounds, 2: searches}
        assert solution.report.details["auction_rounds"] == rounds


@pytest.mark.parametrize("layout", [None, *(layout for _, layout in LAYOUTS)])
def test_a_warm_start_keeps_its_rows_in_every_layout(layout):
    """All-equal costs: a cold search gives row i column i; a warm start that gives row i column
    i + 1 (row 0 free) must be kept, and row 0 alone searched, in every problem of a stack (two
    problems share a warp in the 16-thread layouts)."""
    import cupy

    from lapcli.cuda.batch_lap import solve_stack
    from lapcli.twins import reference_stack

    batch, n = 3, 16  # (1, 16) holds 16 columns
    costs = np.zeros((batch, n, n), dtype=np.int32)
    start = np.tile(np.r_[-1, np.arange(2, n), 0].astype(np.int32), (batch, 1))
    v = np.zeros((batch, n), dtype=np.int64)
    expected = np.tile(np.r_[1, np.arange(2, n), 0], (batch, 1))
    assert np.array_equal(reference_stack(costs, warm_start=(v, start))[0], expected)  # the twin
    result = solve_stack(cupy.asarray(costs), layout=layout, warm_start=(cupy.asarray(v), cupy.asarray(start)))
    assert np.array_equal(result.col_of_row.get(), expected) and not result.status.get().any()
    cold = solve_stack(cupy.asarray(costs), layout=layout)
    assert np.array_equal(cold.col_of_row.get(), np.tile(np.arange(n), (batch, 1)))
    with pytest.raises(ValueError, match="square"):
        solve_stack(cupy.zeros((1, 4, 6), dtype=np.int32), warm_start=(cupy.zeros((1, 6), np.int64),
                                                                        cupy.zeros((1, 4), np.int32)))


def test_no_auction_searches_from_the_rows_the_column_reduction_leaves_free(rng):
    cost = uniform_costs(rng, 300, 300, 10, dtype=np.int32)
    from lapcli.engines.cuda import sap as cuda_sap
    from lapcli.problem import prepare

    result = cuda_sap.solve(prepare(cost), auction_rounds=0)  # no auction launch: the search kernel's own start
    free = 300 - np.unique(cost.argmin(axis=0)).size  # each column's lowest row takes it (distinct rows)
    assert 0 < free < 300 and {s.step: s.count for s in result.steps} == {1: 0, 2: free}
    assert np.array_equal(result.cols, twin(cost, rounds=0)[0])
    assert twin(cost, rounds=0)[4] == free


def test_rectangular_maximize_forbidden_and_device_input(rng):
    import cupy

    cost = rng.random((300, 420))
    assert_matches_scipy(lapcli.solve(cost, solver="cuda-sap", maximize=True), cost, maximize=True)
    forbidden = uniform_costs(rng, 200, 200, 10).astype(float)
    forbidden[rng.random((200, 200)) < 0.3] = np.inf
    reference = forbidden.copy()
    solution = lapcli.solve(forbidden, solver="cuda-sap")
    assert_matches_scipy(solution, reference)
    on_device = cupy.asarray(uniform_costs(rng, 400, 400, 1000, dtype=np.int32))
    solution = lapcli.solve(on_device, solver="cuda-sap")
    assert_matches_scipy(solution, on_device.get())


def test_same_matrix_gives_the_same_answer_every_time(rng):
    cost = generate(1024, kind="geometric", seed=int(rng.integers(2**31)))
    first = lapcli.solve(cost, solver="cuda-sap")
    for _ in range(5):
        again = lapcli.solve(cost, solver="cuda-sap")
        assert np.array_equal(again.col_ind, first.col_ind)
        assert again.report.steps[1].count == first.report.steps[1].count


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
def test_the_device_certificate_rejects_infeasible_duals_and_loose_pairs(rng, dtype):
    """certify on CuPy arrays (one fused launch: each row's least reduced cost and its assigned
    pair's) proves a right answer and refuses spoiled duals, as on the host."""
    import cupy
    from scipy.optimize import linear_sum_assignment

    from lapcli.certificate import certify
    from lapcli.twins import reference_stack
    from lapcli.errors import SolverError

    n = 300
    cost = uniform_costs(rng, n, n, 10).astype(dtype)
    col, u, v, _ = reference_stack(cost[None])
    col, u, v = col[0], u[0], v[0]
    assert cost[np.arange(n), col].sum() == cost[linear_sum_assignment(cost)].sum()
    device = cupy.asarray(cost)
    certificate = certify(device, cupy.asarray(col), cupy.asarray(u), cupy.asarray(v), 1e-9, "test")
    assert certificate.certified and certificate.where == "device"
    assert certificate.min_slack == pytest.approx(min(0, (cost.astype(float) - u[:, None] - v[None, :]).min()))
    raised = u.copy()
    raised[n // 2] += 1  # row n/2 now has a negative reduced cost
    with pytest.raises(SolverError, match="duals infeasible"):
        certify(device, cupy.asarray(col), cupy.asarray(raised), cupy.asarray(v), 1e-9, "test")
    lowered = u.copy()
    lowered[n // 3] -= 1  # feasible, but row n/3's pair is no longer tight
    with pytest.raises(SolverError, match="not tight"):
        certify(device, cupy.asarray(col), cupy.asarray(lowered), cupy.asarray(v), 1e-9, "test")
    undefined = v.astype(np.float64)
    undefined[n // 4] = np.nan  # NaN duals must fail the device check too (as integers: -2^63, too large)
    with pytest.raises(SolverError, match="too large" if dtype.startswith("int") else "duals infeasible"):
        certify(device, cupy.asarray(col), cupy.asarray(u.astype(np.float64)), cupy.asarray(undefined), 1e-9, "test")
