"""Point sets with many exact duplicates: integer coordinates on a grid, both sets drawn
independently, solved by ``lapcli.solve_points`` under ``auto`` (a 100 s limit each), after a
4,096-point warm-up. One JSON line a set: n, the grid's side, the metric, how many distinct points
the first set holds, the seconds, the engine and whether the answer was certified (or the error).

    python benchmarks/points_grid.py > points-grid.jsonl

Needs a GPU for the sizes it runs (20,000 and 65,536 points take the auction on the coordinates).
"""

from __future__ import annotations

import json
import time

import numpy as np

import lapcli
from lapcli.errors import SolverError

CASES = ((20000, 100, "sqeuclidean"), (20000, 1000, "sqeuclidean"), (65536, 256, "sqeuclidean"),
         (65536, 4096, "sqeuclidean"), (20000, 100, "cityblock"))


def main() -> None:
    warm = np.random.default_rng(9).random((4096, 2))
    lapcli.solve_points(warm, warm[::-1].copy())
    for n, side, metric in CASES:
        rng = np.random.default_rng(n + side)
        a = rng.integers(0, side, (n, 2)).astype(float)
        b = rng.integers(0, side, (n, 2)).astype(float)
        began = time.perf_counter()
        try:
            solution = lapcli.solve_points(a, b, metric, timeout=100)
            out = {"solver": solution.report.solver, "certified": solution.report.certified}
        except SolverError as error:
            out = {"error": str(error)[:300]}
        print(json.dumps({"n": n, "grid": side, "metric": metric, "distinct_a": len(np.unique(a, axis=0)),
                          "seconds": round(time.perf_counter() - began, 2), **out}), flush=True)


if __name__ == "__main__":
    main()
