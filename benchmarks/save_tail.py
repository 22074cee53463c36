"""Save where engine ``cuda-sap`` hands a point auction's last rows to its searches
(kernels/sap_rounds.cu), for benchmarks/tail_replay.c to replay on the CPU: the duals v, the kept
columns (-1: a row to search from), each row's lowered pair and the coordinates, as raw float64
files in one folder a solve (2-D points; the metrics the replay computes).

    python benchmarks/save_tail.py --n 65536 --kind clustered --seed 1 --out tails

writes tails/<kind>-<metric>-<n>-<seed>/ and prints the solve's time, rows searched and objective (the
replay's objective must equal it). Needs a Hopper GPU. It wraps lapcli.cuda.points.search_lowered,
the hand-over's one call, to read its arguments: a diagnostic, not an API.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=65536)
    parser.add_argument("--kind", default="clustered", choices=("uniform", "clustered"))
    parser.add_argument("--seed", type=int, default=1, help="the sets use seeds 2·seed + 1 and 2·seed + 2")
    parser.add_argument("--metric", default="sqeuclidean", choices=("sqeuclidean", "euclidean", "cityblock"))
    parser.add_argument("--out", default="tails")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()

    import lapcli
    from lapcli.cuda import points as device_points
    from lapcli.generate import generate_points

    saved = {}
    search_lowered = device_points.search_lowered

    def saving(points, records, v, col, *rest, **keywords):
        saved.update(records=records.get(), v=v.get(), col=col.get())
        return search_lowered(points, records, v, col, *rest, **keywords)

    device_points.search_lowered = saving
    a = generate_points(args.n, 2, kind=args.kind, seed=2 * args.seed + 1)
    b = generate_points(args.n, 2, kind=args.kind, seed=2 * args.seed + 2)
    began = time.perf_counter()
    solution = lapcli.solve_points(a, b, args.metric, solver="cuda-sap", timeout=args.timeout)
    details = solution.report.details
    print(json.dumps({"n": args.n, "kind": args.kind, "metric": args.metric, "seed": args.seed, "s": round(time.perf_counter() - began, 2),
                      "certified": solution.report.certified, "objective": solution.objective,
                      "rows_searched": details.get("tail_searches"), "search_rounds": details.get("search_rounds")}))
    if not saved:
        print("the auction assigned every row: no searches, nothing saved")
        return
    records = saved["records"]  # (n, 4): the row's point, its lowered column (-1: none), that pair's cost
    write_tail(os.path.join(args.out, f"{args.kind}-{args.metric}-{args.n}-{args.seed}"), a, b, saved["v"],
               saved["col"], records[:, 2], records[:, 3], args.metric)


def write_tail(folder, a, b, v, col, lowered_col, lowered_cost, metric: str) -> None:
    """The folder benchmarks/tail_replay.c reads: each array as raw float64 (the coordinates a
    file an axis), n.txt and metric.txt."""
    os.makedirs(folder, exist_ok=True)
    files = {"ax": a[:, 0], "ay": a[:, 1], "bx": b[:, 0], "by": b[:, 1], "v": v, "col": col,
             "lowered_col": lowered_col, "lowered_cost": lowered_cost}
    for name, values in files.items():
        np.ascontiguousarray(values, dtype=np.float64).tofile(os.path.join(folder, name))
    with open(os.path.join(folder, "n.txt"), "w") as file:
        file.write(f"{len(a)}\n")
    with open(os.path.join(folder, "metric.txt"), "w") as file:
        file.write(f"{metric}\n")

if __name__ == "__main__":
    main()
