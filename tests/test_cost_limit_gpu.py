"""lapjv's cost_limit through the GPU engines (the augmented (n + m)² problem the pipeline builds,
lapcli.cost_limit): the CPU tests hold the transform; these, that cuda, cuda-stepwise, cuda-sap and
auto's choice solve it to the lapjv reference's augmented total (pytest -m gpu)."""

import numpy as np
import pytest

import lapcli

from .test_certificate import lapjv_reference

pytestmark = pytest.mark.gpu


def augmented_total(cost, limit, rows, cols):
    """The (n + m)² problem's cost of an answer: its pairs, and L/2 for each row and column left out
    (ties may pick other pairs, never another total)."""
    n, m = cost.shape
    return float(cost[rows, cols].sum()) + limit / 2 * (n + m - 2 * len(rows))


@pytest.mark.parametrize("solver", ["cuda", "cuda-stepwise", "cuda-sap", "auto"])
@pytest.mark.parametrize("shape", [(60, 60), (40, 70), (70, 40), (400, 520)])
@pytest.mark.parametrize("kind", ["int", "float", "float32 asked"])
def test_the_gpu_engines_leave_the_rows_lapjv_leaves(rng, solver, shape, kind):
    if solver == "cuda-stepwise" and shape[0] > 100:
        pytest.skip("the stepwise ablation is slow at this size")
    cost = rng.integers(0, 1000, shape) if kind == "int" else rng.random(shape) * 1000
    dtype = "float32" if kind == "float32 asked" else None
    if dtype:
        cost = cost.astype(np.float32).astype(np.float64)  # the costs float32 work solves, exactly
    for limit in (150.0, 500.5, 1e9):
        solution = lapcli.solve(cost, cost_limit=limit, solver=solver, dtype=dtype)
        rows, cols = lapjv_reference(cost, limit)
        assert solution.report.certified
        assert (solution.x >= 0).sum() == len(solution.row_ind)
        found = augmented_total(cost, limit, solution.row_ind, solution.col_ind)
        assert found == pytest.approx(augmented_total(cost, limit, rows, cols), rel=1e-6 if dtype else 1e-12)


@pytest.mark.parametrize("solver", ["cuda", "cuda-stepwise", "cuda-sap", "auto"])
def test_equal_costs_below_the_limit_are_all_taken_in_float32_work(solver):
    """The ceiling that stands for a limit above every cost keeps a margin float32 work holds."""
    for cost in (np.full((3, 3), 7.0), np.full((50, 80), -3.0), np.full((80, 50), 1e6)):
        solution = lapcli.solve(cost, cost_limit=float(cost.max()) + 1, dtype="float32", solver=solver)
        assert (solution.x >= 0).sum() == min(cost.shape) and solution.report.certified
