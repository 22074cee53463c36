"""Large finite placeholders beside the GPU engines that compare reduced costs with eps (cuda, cuda-sap,
and auto's choice among them): the optimum, certified at the capped tolerance (pytest -m gpu)."""

import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli

from .test_cost_cap import placeholders, spanning

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("solver", ["cuda", "cuda-stepwise", "cuda-sap", "auto"])
@pytest.mark.parametrize("big", [1e6, 1e9, 1e12, 1e20])
@pytest.mark.parametrize("shape", [(700, 700), (500, 640), (3000, 3000)])
@pytest.mark.parametrize("on_device", [False, True])
def test_the_gpu_engines_find_the_optimum_beside_placeholders(rng, solver, big, shape, on_device):
    import cupy

    if solver == "cuda-stepwise" and shape[0] > 1000:
        pytest.skip("the stepwise ablation is slow at this size")
    cost = placeholders(rng, *shape, big, forbid=0.01)
    rows, cols = scipy_lsa(cost)
    best = cost[rows, cols].sum()
    solution = lapcli.solve(cupy.asarray(cost) if on_device else cost, solver=solver)
    assert solution.report.certified
    assert float(solution.objective) == pytest.approx(best, rel=1e-12, abs=1e-9)
    assert solution.report.certificate["tolerance"] < 1e-8


@pytest.mark.parametrize("solver", ["cuda", "cuda-sap"])
def test_a_heavy_tail_is_judged_again_not_solved_again(rng, solver):
    """Exponential costs (the largest reduced cost ~30 times the optimum's reduced total): the answer is
    the optimum, solved once (a second solve doubled cuda-sap's time for the same pairs)."""
    cost = rng.exponential(size=(2048, 2048))
    rows, cols = scipy_lsa(cost)
    solution = lapcli.solve(cost, solver=solver)
    assert solution.report.certified and "costs_capped_at" not in solution.report.details
    assert float(solution.objective) == pytest.approx(cost[rows, cols].sum(), rel=1e-12)


@pytest.mark.parametrize("solver", ["cuda", "cuda-sap", "auto"])
@pytest.mark.parametrize("shape", [(700, 700), (500, 640), (3000, 3000)])
@pytest.mark.parametrize("on_device", [False, True])
def test_float32_costs_beside_placeholders_are_solved_again_in_float64(rng, solver, shape, on_device):
    """float32 work follows max |c|: solved again on float64 work, capped, for the optimum."""
    import cupy
    import numpy as np

    cost = placeholders(rng, *shape, 1e12, forbid=0.01).astype(np.float32)
    rows, cols = scipy_lsa(cost.astype(np.float64))
    best = cost.astype(np.float64)[rows, cols].sum()
    solution = lapcli.solve(cupy.asarray(cost) if on_device else cost, solver=solver)
    assert solution.report.certified and solution.report.certificate["tolerance"] < 1e-8
    assert float(solution.objective) == pytest.approx(best, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("solver", ["cuda", "cuda-sap", "auto"])
@pytest.mark.parametrize("shape", [(40, 40), (300, 300), (200, 260), (2048, 2048)])
def test_costs_across_hundreds_of_orders_are_the_optimum(rng, solver, shape):
    """exp(U·600 − 300) costs: each capped answer capped again until the answer is the optimum."""
    cost = spanning(rng, *shape, 600)
    rows, cols = scipy_lsa(cost)
    solution = lapcli.solve(cost, solver=solver)
    assert solution.report.certified
    assert float(solution.objective) == pytest.approx(cost[rows, cols].sum(), rel=1e-12, abs=0)


@pytest.mark.parametrize("shape", [(16, 40, 40), (4, 300, 300)])
def test_a_stack_of_costs_across_hundreds_of_orders_is_the_optimum(rng, shape):
    """cuda-batch caps no member: each member of an exp(U·600 − 300) stack is still its optimum."""
    import numpy as np

    stack = np.stack([spanning(rng, *shape[1:], 600) for _ in range(shape[0])])
    solution = lapcli.solve_batch(stack, solver="cuda-batch")
    best = [cost[scipy_lsa(cost)].sum() for cost in stack]
    assert np.asarray(solution.objectives) == pytest.approx(best, rel=1e-12, abs=0)
