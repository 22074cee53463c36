"""Every form of a matcher call in one process, beside torch-linear-assignment, and that library's
own published cases (B = 208 float32 stacks of 300 × 100, 300 × 300 and 300 × 600, device→device
and host→host): in-process medians of many calls, with each form's kernel time and whether its
members were read in place. Needs a GPU, torch and torch-linear-assignment.

    python benchmarks/matcher_forms.py > matcher-forms.txt
"""

from __future__ import annotations

import time

import numpy as np


def median_ms(call, repeat: int = 200) -> float:
    import torch

    for _ in range(20):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - began)
    return round(1e3 * float(np.median(times)), 4)


def matcher_cells(tla) -> None:
    from scipy.optimize import linear_sum_assignment

    import lapcli
    from lapcli.bench.matcher import MATCHER_CELLS, PAD, matcher_case

    for batch, queries, most in MATCHER_CELLS:
        case = matcher_case(batch, queries, most, 1)
        padded, nan_padded = case.padded(PAD), case.padded(float("nan"))
        sizes = (np.full(batch, queries), np.array(case.counts))
        slices = [case.block[i, :, s:s + k] for i, (s, k) in enumerate(zip(case.starts, case.counts))]
        row = {"scipy": median_ms(lambda: [linear_sum_assignment(c[i]) for i, c in
                                           enumerate(case.block.cpu().split(case.counts, -1))], 20),
               "match": median_ms(lambda: lapcli.match(case.block, case.counts)),
               "sizes": median_ms(lambda: lapcli.batch_linear_assignment(nan_padded, sizes=sizes)),
               "list": median_ms(lambda: lapcli.batch_linear_assignment(slices)),
               "padded": median_ms(lambda: lapcli.batch_linear_assignment(padded)),
               "torch-la": median_ms(lambda: tla(padded))}
        for name, solution in (("sizes", lapcli.solve_batch(nan_padded, sizes=sizes)),
                               ("padded", lapcli.solve_batch(padded))):
            row[f"{name}_kernel"] = solution.report.details.get("kernel_ms")
            row[f"{name}_members"] = solution.report.details.get("members")
        print(f"{batch}x{queries}x{most}", row, flush=True)


def published_cases(tla) -> None:
    import torch

    import lapcli

    for n, m in ((300, 100), (300, 300), (300, 600)):
        host = torch.rand((208, n, m), generator=torch.Generator().manual_seed(n + m))
        device = host.cuda()
        row = {"d2d": median_ms(lambda: lapcli.batch_linear_assignment(device), 100),
               "tla_d2d": median_ms(lambda: tla(device), 100),
               "h2h": median_ms(lambda: lapcli.batch_linear_assignment(host), 50),
               "tla_h2h": median_ms(lambda: tla(host.cuda()).cpu(), 50)}
        details = lapcli.solve_batch(device).report.details
        row["kernel"], row["members"] = details.get("kernel_ms"), details.get("members")
        ours, theirs = lapcli.batch_linear_assignment(device).cpu().numpy(), tla(device).cpu().numpy()
        costs = host.numpy().astype(np.float64)
        total = [sum(costs[i][np.flatnonzero(c[i] >= 0), c[i][c[i] >= 0]].sum() for i in range(208))
                 for c in (ours, theirs)]
        row["objective_rel_diff"] = float(abs(total[0] - total[1]) / abs(total[1]))
        print(f"208x{n}x{m}", row, flush=True)


if __name__ == "__main__":
    from torch_linear_assignment import batch_linear_assignment

    matcher_cells(batch_linear_assignment)
    published_cases(batch_linear_assignment)
