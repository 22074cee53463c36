"""Kernel milliseconds of the batch kernel's ragged launch on DETR's matcher blocks and on uniform
float32 stacks (CUDA events around the launch, medians of 30 solves), with each case's summed
objective and layout, as one JSON line. Run it once per tree to compare two trees in one lease:

    PYTHONPATH=<old tree> python benchmarks/ragged_kernel_ms.py old
    PYTHONPATH=<new tree> python benchmarks/ragged_kernel_ms.py new

Needs a GPU and torch.
"""

from __future__ import annotations

import json
import sys

import numpy as np

BLOCKS = ((16, 300, 300, 0), (16, 300, 300, 1), (16, 300, 300, 2), (16, 300, 300, 3), (64, 300, 100, 0),
          (32, 300, 50, 0), (16, 900, 100, 0), (128, 100, 30, 0), (8, 100, 20, 0))
STACKS = ((208, 300, 100), (100, 300, 300), (100, 256, 256))


def kernel_ms(members, repeat: int = 30) -> tuple[float, float, str]:
    from lapcli.pipeline import solve_members_raw

    solved = [solve_members_raw(members) for _ in range(repeat)]
    return (round(float(np.median([s.report.details["kernel_ms"] for s in solved])), 4),
            float(np.sum(solved[-1].objectives)), solved[-1].report.details.get("layout"))


def main(tag: str) -> None:
    import torch

    from lapcli import ragged
    from lapcli.bench.matcher import matcher_case

    out = {}
    for batch, queries, most, seed in BLOCKS:
        case = matcher_case(batch, queries, most, seed)
        out[f"{batch}x{queries}x{most} s{seed}"] = kernel_ms(ragged.from_block(case.block, case.counts))
    generator = torch.Generator(device="cuda").manual_seed(5)
    for batch, n, m in STACKS:
        stack = torch.rand((batch, n, m), device="cuda", generator=generator)
        out[f"stack {batch}x{n}x{m}"] = kernel_ms(ragged.from_padded(stack, (np.full(batch, n), np.full(batch, m))))
    print(tag, json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tree")
