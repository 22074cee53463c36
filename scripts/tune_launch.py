"""Launch-parameter experiment on a GPU: block size, blocks per SM, step-6 unroll, pinned upload.

Prints the median ms (host array to host assignment) of the cooperative solver per variant at the
issue's comparison points. Used to pick the defaults in lapcli/engines/cuda_hungarian.py.
"""

import os
import statistics
import sys
import time

import numpy as np

from lapcli.problem import prepare
from lapcli.engines import cuda_hungarian as cuda_solver

POINTS = [(1024, 1), (4096, 1), (4096, 100), (8192, 1000)]
VARIANTS = [  # (block, blocks per SM, defines, pinned upload)
    (512, 1, ("LAP_UNROLL=8",), "1"),
    (512, 1, ("LAP_UNROLL=8",), "0"),
    (512, 1, ("LAP_UNROLL=4",), "1"),
    (512, 1, ("LAP_UNROLL=16",), "1"),
    (256, 1, ("LAP_UNROLL=8",), "1"),
    (256, 2, ("LAP_UNROLL=8",), "1"),
    (1024, 1, ("LAP_UNROLL=8",), "1"),
]
repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 3
rng = np.random.default_rng(2026)
matrices = {p: rng.integers(0, max(1, round(p[1] * p[0])), p[:1] * 2).astype(np.int32) for p in POINTS}
for block, per_sm, defines, pin in VARIANTS:
    os.environ["LAPCLI_PIN"] = pin
    cells = []
    for point, cost in matrices.items():
        times = []
        for attempt in range(repeat + 1):
            problem = prepare(cost)
            start = time.perf_counter()
            result = cuda_solver.run(problem, block_size=block, blocks_per_sm=per_sm, defines=defines)
            if attempt:
                times.append((time.perf_counter() - start) * 1e3)
        d = result.details
        step6 = result.steps[5]
        cells.append(f"{point[0]}/{point[1]}: {statistics.median(times):8.1f} (h2d {d['h2d_ms']:.1f}, s6 {1e3 * step6.ms / max(1, step6.count):.0f}us)")
    print(f"block {block:4d} x{per_sm} {'+'.join(defines)} pin={pin} grid={d['grid']}: " + " | ".join(cells), flush=True)
