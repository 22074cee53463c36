"""Time the CUDA solver at the issue's five comparison points (median of repeats, warm)."""

import sys
import time

import numpy as np

import lapcli

POINTS = [(1024, 1), (4096, 1), (4096, 100), (8192, 10), (8192, 1000)]
repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 3
max_n = int(sys.argv[2]) if len(sys.argv) > 2 else 8192
rng = np.random.default_rng(12345)
lapcli.solve(np.eye(8, dtype=np.int32), solver="cuda")  # compile + context
for n, r in POINTS:
    if n > max_n:
        continue
    cost = rng.integers(0, max(1, round(r * n)), (n, n)).astype(np.int32)
    times, sol = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        sol = lapcli.solve(cost, solver="cuda")
        times.append((time.perf_counter() - t) * 1e3)
    d = sol.report.details
    steps = " ".join(f"{s.step}:{s.count}/{s.ms:.1f}" for s in sol.report.steps)
    print(f"n={n} R={r} median {np.median(times):.1f} ms (h2d {d['h2d_ms']} kernel {d['kernel_ms']} d2h {d['d2h_ms']}) grid {d['grid']}x{d['block']} steps {steps}", flush=True)
