"""Issue #12's CPU table: lapcli's auto against scipy on the issue's seven inputs, in one process
(best of 5) — writes the inputs as .npy into OUT for the process comparison (lap solve as a
process against a python one-liner that loads the file and calls scipy)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli


def inputs(rng):
    points_a, points_b = rng.random((800, 2)), rng.random((800, 2))
    squared = ((points_a[:, None, :] - points_b[None, :, :]) ** 2).sum(axis=2)
    return {
        "20x1000-int": (rng.integers(0, 1000, (20, 1000)), False),
        "1x1000-float": (rng.random((1, 1000)), False),
        "1000x30-float": (rng.random((1000, 30)), False),
        "300x400-int": (rng.integers(0, 1000, (300, 400)), False),
        "1000-int-1e6": (rng.integers(0, 10**6, (1000, 1000)), False),
        "800-sqdist-max": (squared, True),
        "500-float": (rng.random((500, 500)), False),
    }


def best(function, repeat=20):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1e3)
    return min(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="dispatch-inputs")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(12)
    print(f"{'input':16} {'scipy ms':>9} {'lsa ms':>9} {'ratio':>6} {'solve ms':>9} {'ratio':>6}  engine")
    for name, (cost, maximize) in inputs(rng).items():
        np.save(out / f"{name}.npy", cost)
        scipy_ms = best(lambda: scipy_lsa(cost, maximize=maximize))
        lsa_ms = best(lambda: lapcli.linear_sum_assignment(cost, maximize=maximize))
        solve_ms = best(lambda: lapcli.solve(cost, maximize=maximize))
        engine = lapcli.solve(cost, maximize=maximize).report.solver
        print(f"{name:16} {scipy_ms:9.3f} {lsa_ms:9.3f} {lsa_ms / scipy_ms:6.2f} {solve_ms:9.3f} "
              f"{solve_ms / scipy_ms:6.2f}  {engine}")


if __name__ == "__main__":
    main()
