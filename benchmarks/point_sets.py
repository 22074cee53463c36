"""Point-set cases solved by the point auction (``lapcli.solve_points(a, b, metric,
solver="cuda-sap")``), one process, each metric's kernels loaded and a square solved before its
first case (lapcli.bench.points.load_point_programs: no case times a compilation): a line a case
with the wall seconds, whether the answer was certified, its objective, the auction's bids, full
scans and floor-proved bids, the rows its searches took (and those a price war deferred to them),
their rounds, the coarse phase's factor and the warm start's reach (sap_warm.reach), and each
phase's milliseconds (the searches' last).

A case is N:KIND:SEED:METRIC, KIND uniform or clustered (lap generate --points --kind), the rows
``generate_points(N, 2, KIND, seed=2·SEED+1)`` and the columns seed 2·SEED+2 (docs/points.md's sets):

    python benchmarks/point_sets.py 65536:clustered:0:sqeuclidean 65536:uniform:1:cityblock \\
        [--coarse-up-to N] [--chain-limit N] [--limit 60] [--json cases.jsonl]

``--coarse-up-to`` sets sap_points.COARSE_FIRST_UP_TO (the coarse first phase up to N points; 0:
none); ``--chain-limit`` the eviction chains' limit in every phase but the coarse one
(sap_points.points_chain_limit) to N bids at every size. To compare two checkouts, run it once
per tree (PYTHONPATH=TREE), in turn. Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import time


def case_points(case: str):
    """(n, kind, seed, metric, rows, columns) of a case N:KIND:SEED:METRIC."""
    from lapcli.generate import generate_points

    n, kind, seed, metric = case.split(":")
    n, seed = int(n), int(seed)
    return (n, kind, seed, metric, generate_points(n, 2, kind=kind, seed=2 * seed + 1),
            generate_points(n, 2, kind=kind, seed=2 * seed + 2))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", help="N:KIND:SEED:METRIC")
    parser.add_argument("--coarse-up-to", type=int, default=None, help="sap_points.COARSE_FIRST_UP_TO")
    parser.add_argument("--chain-limit", type=int, default=None, help="sap_points.points_chain_limit, every n")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds a solve (its timeout)")
    parser.add_argument("--json", default=None, help="append a JSON line a case to this file")
    args = parser.parse_args()

    import lapcli
    from lapcli.bench.points import load_point_programs
    from lapcli.engines.cuda import sap_points
    from lapcli.errors import SolverError

    if args.coarse_up_to is not None:
        sap_points.COARSE_FIRST_UP_TO = args.coarse_up_to
    if args.chain_limit is not None:
        sap_points.points_chain_limit = lambda n: args.chain_limit
    for metric in dict.fromkeys(case.split(":")[3] for case in args.cases):
        load_point_programs("cuda-sap", metric)  # and a small solve: CuPy's own kernels too
    for case in args.cases:
        n, kind, seed, metric, a, b = case_points(case)
        began = time.perf_counter()
        try:
            solution = lapcli.solve_points(a, b, metric, solver="cuda-sap", timeout=args.limit)
        except SolverError as error:
            print(f"{case}: {type(error).__name__} after {time.perf_counter() - began:.1f} s: {error}", flush=True)
            continue
        wall = time.perf_counter() - began
        details = solution.report.details
        record = {"case": case, "wall_s": round(wall, 3), "certified": solution.report.certified,
                  "objective": solution.objective, "bids": details.get("auction_bids"),
                  "full_scans": details.get("auction_full_scans"),
                  "proved": details.get("auction_proved_bids"), "searches": details.get("tail_searches"),
                  "deferred": details.get("auction_deferred"), "search_rounds": details.get("search_rounds"),
                  "coarse_factor": details.get("coarse_factor"), "reach": details.get("warm_start_reach"),
                  "phases_ms": [round(step.ms, 1) for step in solution.report.steps]}
        print(f"{case}: {wall:.2f} s, certified {record['certified']}, objective {solution.objective:.12g}, "
              f"bids {record['bids']}, full scans {record['full_scans']}, proved {record['proved']}, "
              f"searches {record['searches']} "
              f"(deferred {record['deferred']}, {record['search_rounds']} rounds), coarse factor "
              f"{record['coarse_factor']} (sample's reach {record['reach']}), phases {record['phases_ms']}",
              flush=True)
        if args.json:
            with open(args.json, "a") as out:
                out.write(json.dumps(record) + "\n")


if __name__ == "__main__":
    main()
