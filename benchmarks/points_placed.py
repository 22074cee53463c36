"""Point sets placed as users bring them, solved by the point auction (``lapcli.solve_points(a, b,
metric, solver="cuda-sap")``, or ``--solver``'s route) after a warm-up solve of each metric and
dimension (40,000 points, or the case's n if fewer):
a JSON line a case with the seconds, whether the answer was certified, its objective, the bids, the
rows the searches took, the warm start's reach, the coarse factor, and each step's milliseconds.

A case is N:D:METRIC:PLACE; the rows are U[0, 1)^D (seed 7), and PLACE the columns:
``uniform`` (another such set), ``moved<T>`` (another, moved by T in every coordinate),
``along<T>`` (another, moved by T in the first coordinate only),
``scaled<F>`` (another, scaled by F), ``copy<S>`` (a permutation of the rows, noise of standard
deviation S, moved by 1):

    python benchmarks/points_placed.py 65536:2:sqeuclidean:moved0.5 65536:2:sqeuclidean:copy0.001 \\
        65536:3:euclidean:uniform [--limit 40] [--no-frame] [--solver auto]

``--no-frame`` solves sqeuclidean squares where the sets lie (lapcli.points_frame off), the engine
before it; ``--maximize`` the largest total (``--no-mirror``: a maximised sqeuclidean square not
solved as its mirror's minimum; the warm-up solve is always minimised); ``--solver`` another
route (``auto``: 2,049 to 16,384 points as their matrix built on the GPU,
lapcli.engines.auto.points_route). Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def placed(n: int, dim: int, place: str, seed: int = 7):
    """(rows, columns) of a case's PLACE."""
    rng = np.random.default_rng(seed)
    a = rng.random((n, dim))
    other = np.random.default_rng(seed + 1)
    if place == "uniform":
        return a, other.random((n, dim))
    if place.startswith("moved"):
        return a, other.random((n, dim)) + float(place[len("moved"):])
    if place.startswith("along"):
        return a, other.random((n, dim)) + np.eye(dim)[0] * float(place[len("along"):])
    if place.startswith("scaled"):
        return a, other.random((n, dim)) * float(place[len("scaled"):])
    if place.startswith("copy"):
        noise = float(place[len("copy"):])
        return a, a[rng.permutation(n)] + noise * rng.standard_normal((n, dim)) + 1.0
    raise SystemExit(f"unknown place {place!r}: uniform, moved<T>, along<T>, scaled<F> or copy<S>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", help="N:D:METRIC:PLACE")
    parser.add_argument("--limit", type=float, default=40.0, help="seconds a solve (its timeout)")
    parser.add_argument("--no-frame", action="store_true", help="solve sqeuclidean squares where the sets lie")
    parser.add_argument("--solver", default="cuda-sap", help="the route (default cuda-sap: the point auction)")
    parser.add_argument("--maximize", action="store_true", help="the largest total instead of the smallest")
    parser.add_argument("--no-mirror", action="store_true", help="maximised sqeuclidean squares not mirrored")
    args = parser.parse_args()

    import lapcli
    from lapcli import points_frame
    from lapcli.errors import SolverError

    if args.no_frame:
        points_frame.onto_rows = lambda problem: None
    if args.no_mirror:
        points_frame.mirrored = lambda problem: None
    warmed = set()
    for case in args.cases:
        n, dim, metric, place = case.split(":")
        n, dim = int(n), int(dim)
        if (metric, dim) not in warmed:  # the programs compiled and CuPy's kernels loaded before any timed case
            warm = np.random.default_rng(5).random((min(40_000, n), dim))
            lapcli.solve_points(warm, warm[::-1].copy(), metric, solver=args.solver)
            warmed.add((metric, dim))
        a, b = placed(n, dim, place)
        began = time.perf_counter()
        try:
            solution = lapcli.solve_points(a, b, metric, solver=args.solver, timeout=args.limit,
                                           maximize=args.maximize)
        except SolverError as error:
            print(json.dumps({"case": case, "error": str(error)[:200], "s": round(time.perf_counter() - began, 2)}),
                  flush=True)
            continue
        details = solution.report.details
        print(json.dumps({"case": case, "s": round(time.perf_counter() - began, 3),
                          "certified": solution.report.certified, "objective": solution.objective,
                          "bids": details.get("auction_bids"), "searches": details.get("tail_searches"),
                          "reach": details.get("warm_start_reach"), "coarse_factor": details.get("coarse_factor"),
                          "solver": solution.report.solver, "frame": details.get("frame"),
                          "mirror": "mirror" in details,
                          "steps_ms": [round(step.ms) for step in solution.report.steps]}), flush=True)


if __name__ == "__main__":
    main()
