"""The Python API: a scipy drop-in, and the full Solution with its per-step report."""

import numpy as np

import lapcli
from lapcli import linear_sum_assignment

rng = np.random.default_rng(0)
cost = rng.integers(0, 1000, size=(300, 400))  # rectangular: 300 pairs

row_ind, col_ind = linear_sum_assignment(cost)
print("scipy-style objective:", cost[row_ind, col_ind].sum())

solution = lapcli.solve(cost, maximize=True)
print("maximum:", solution.objective, "by", solution.report.solver)
for step in solution.report.steps:
    print(f"  step {step.step} {step.name:28s} ×{step.count:<6d} {step.ms:8.3f} ms")
