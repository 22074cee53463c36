"""Time the largest single problems host → host: an n × n int32 matrix in host memory
(integers uniform in [0, R·n), drawn on the GPU for speed, a block of rows at a time, into host memory),
solved by ``lapcli.solve(..., solver="cuda")`` several times; prints the wall time of each solve and
its report's h2d / kernel / d2h split, and writes a JSON record with --out.

Usage: python3 benchmarks/big_solve.py [--n 65536] [--range 1] [--repeat 3] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import lapcli  # noqa: E402


def host_matrix(n: int, range_factor: float, seed: int, block_rows: int = 4096) -> np.ndarray:
    """The matrix drawn on the GPU a block of rows at a time (n = 131,072 int32 is 68.7 GB: the
    device holds one block besides, never a second matrix) into page-aligned host memory."""
    import cupy

    cupy.random.seed(seed)
    high = max(1, round(range_factor * n))
    host = np.empty((n, n), dtype=np.int32)
    for start in range(0, n, block_rows):
        block = cupy.random.randint(0, high, size=(min(block_rows, n - start), n), dtype=np.int32)
        block.get(out=host[start:start + block.shape[0]])
    del block
    cupy.get_default_memory_pool().free_all_blocks()
    return host


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=65536)
    parser.add_argument("--range", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out")
    args = parser.parse_args()
    cost = host_matrix(args.n, args.range, args.seed)
    runs = []
    for attempt in range(args.repeat + 1):  # the first compiles the kernel: not counted
        start = time.perf_counter()
        solution = lapcli.solve(cost, solver="cuda")
        wall = time.perf_counter() - start
        details = solution.report.details
        run = {"wall_s": round(wall, 4), **{k: details[k] for k in ("h2d_ms", "kernel_ms", "d2h_ms", "compile_ms")}}
        print(f"n={args.n} R={args.range}: {'warm-up ' if attempt == 0 else ''}wall {wall:.3f} s, h2d "
              f"{details['h2d_ms']:.0f} ms, kernel {details['kernel_ms']:.0f} ms, d2h {details['d2h_ms']:.1f} ms, "
              f"certified {solution.report.certified}", flush=True)
        if attempt:
            runs.append(run)
    record = {"n": args.n, "range": args.range, "dtype": "int32", "gigabytes": cost.nbytes / 1e9,
              "device": solution.report.device, "runs": runs,
              "median_wall_s": float(np.median([r["wall_s"] for r in runs]))}
    print(f"median wall {record['median_wall_s']:.3f} s over {len(runs)} solves")
    if args.out:
        with open(args.out, "w") as handle:
            json.dump(record, handle, indent=2)


if __name__ == "__main__":
    main()
