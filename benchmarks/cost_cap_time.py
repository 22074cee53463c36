"""Float matrices with and without large placeholders through the GPU engines that compare reduced
costs with eps (lapcli.cost_cap): a JSON line a case and solver with the wall seconds of
``lapcli.solve`` (host arrays, the median of 5 after a warm-up), the objective less scipy's optimum
(n ≤ 4,096), the certificate's tolerance and the cap where the engine solved again. Cases, seed 3:
U[0, 1), Exp(1), and U[0, 1) with 5 % of the entries 1e12 (an assignment kept free of them), at
n = 2,048, 4,096 and 8,192, float64 or (DTYPE float32) rounded to float32. Whichever lapcli is first
on the path is timed:

    python benchmarks/cost_cap_time.py LABEL [DTYPE]

Needs a GPU.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa


def cases(rng) -> dict:
    found = {}
    for n in (2048, 4096, 8192):
        found[f"uniform {n}"] = rng.random((n, n))
        found[f"exponential {n}"] = rng.exponential(size=(n, n))
        placeholders = rng.random((n, n))
        mask = rng.random((n, n)) < 0.05
        mask[np.arange(n), rng.permutation(n)] = False
        placeholders[mask] = 1e12
        found[f"5% at 1e12 {n}"] = placeholders
    return found


def main() -> None:
    import lapcli

    label = sys.argv[1] if len(sys.argv) > 1 else ""
    dtype = np.dtype(sys.argv[2] if len(sys.argv) > 2 else "float64")
    for name, cost in cases(np.random.default_rng(3)).items():
        cost, best = cost.astype(dtype), None
        if cost.shape[0] <= 4096:
            rows, cols = scipy_lsa(cost.astype(np.float64))
            best = float(cost.astype(np.float64)[rows, cols].sum())
        for solver in ("cuda", "cuda-sap", "auto"):
            lapcli.solve(cost, solver=solver)
            times, solution = [], None
            for _ in range(5):
                began = time.perf_counter()
                solution = lapcli.solve(cost, solver=solver)
                times.append(time.perf_counter() - began)
            print(json.dumps({"tree": label, "case": f"{name} {dtype}", "solver": solver, "engine": solution.report.solver,
                              "s": round(float(np.median(times)), 4),
                              "off": None if best is None else solution.objective - best,
                              "tolerance": solution.report.certificate.get("tolerance"),
                              "capped_at": solution.report.details.get("costs_capped_at")}), flush=True)


if __name__ == "__main__":
    main()
