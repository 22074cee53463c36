"""Time two checkouts of lapcli on the same machine, suite by suite, and flag every cell that got slower.

Usage (on a GPU machine, each tree a plain copy of the package, e.g. ``git archive REV | tar -x``):

    python3 benchmarks/compare_trees.py --base OLD_TREE --head NEW_TREE --out DIR \
        [--suites ranges,hylac,papers,batch] [--repeat 5] [--limit 0.05]

Each suite runs four times, base-head-head-base (ABBA), as ``lap bench --suite S --json`` in a
fresh process with ``PYTHONPATH`` pointing at the tree; a cell's time per tree is the smaller of
its two medians, so drift during the run cancels instead of landing on one tree. Writes the four
JSON records per suite and ``compare.json`` (every cell: base ms, head ms, head / base) under DIR,
prints the cells above ``1 + limit`` and those the base timed and the head did not (an error, a
time-out, a missing record), and exits 1 when there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

SUITE_ARGS = {  # the solvers each suite times (peers are timed in the suites' own runs, not here)
    "ranges": ["--sizes", "1024,2048", "--solvers", "cuda,cuda-sap,auto", "--warmup", "1"],
    "hylac": ["--solvers", "cuda,cuda-stepwise", "--warmup", "1"],
    "papers": ["--solvers", "cuda", "--warmup", "1"],
    "batch": ["--solvers", "cuda-batch,cuda-batch:d2d", "--warmup", "2"],
    "quick": ["--solvers", "scipy,numpy", "--warmup", "1"],  # CPU only: a check of this script
    # the papers' grid's cells of at most 2048 (a few ms each: where fixed costs of a call show)
    "papers-small": ["--sizes", "256,512,1024,2048", "--solvers", "cuda", "--warmup", "1"],
    # the grid's cells from 1024 through auto, whichever engine it picks in each tree, beside cuda
    # (``--solvers auto`` alone means every engine available)
    "papers-auto": ["--sizes", "1024,2048,4096,8192", "--solvers", "auto,cuda", "--warmup", "1"],
    # the point auction on the coordinates at 65,536 points: uniform, euclidean, cityblock, clustered
    "points": ["--sizes", "65536", "--solvers", "cuda-sap", "--warmup", "0"],
}


def cell_key(row: dict) -> tuple:
    """What identifies a cell across the two trees' records."""
    runner = row.get("runner") or row.get("solver")
    return tuple(str(row.get(k)) for k in ("batch", "n", "kind", "range_factor", "dtype", "metric")) + (runner,)


def run_suite(tree: Path, suite: str, repeat: int, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, "-m", "lapcli", "bench", "--suite", suite.split("-")[0], *SUITE_ARGS[suite],
               "--repeat", str(repeat),
               "--json", str(out)]  # not --quiet: a base tree may predate its fix for Rich 15
    with open(out.with_suffix(".log"), "w") as log:
        subprocess.run(command, env=env, check=False, cwd=tree, stdout=log, stderr=subprocess.STDOUT)
    rows = json.loads(out.read_text())["results"] if out.exists() else []
    return {cell_key(r): r["median_ms"] if r.get("status") == "ok" else None for r in rows}  # None: no time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--head", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--suites", default="ranges,hylac,papers,batch")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--limit", type=float, default=0.05)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cells, slower, broken = [], [], []
    for suite in args.suites.split(","):
        times: dict[str, list[dict]] = {"base": [], "head": []}
        for index, label in enumerate(("base", "head", "head", "base")):
            tree = args.base if label == "base" else args.head
            times[label].append(run_suite(tree.resolve(), suite, args.repeat, args.out / f"{suite}-{label}-{index}.json"))
        for key in times["base"][0]:
            base = [t[key] for t in times["base"] if t.get(key) is not None]
            head = [t.get(key) for t in times["head"]]
            if not base:  # the base has no time here either
                continue
            if None in head:  # the head failed, stopped or lost a cell the base timed: worse than slower
                broken.append({"suite": suite, "cell": list(key)})
                continue
            base = min(base)
            cell = {"suite": suite, "cell": list(key), "base_ms": base, "head_ms": min(head), "ratio": min(head) / base}
            cells.append(cell)
            if cell["ratio"] > 1 + args.limit:
                slower.append(cell)
    (args.out / "compare.json").write_text(json.dumps({"cells": cells, "broken": broken, "limit": args.limit}, indent=1))
    for cell in cells:
        flag = "  SLOWER" if cell in slower else ""
        print(f"{cell['suite']:7} {' '.join(cell['cell']):60} base {cell['base_ms']:9.3f}  head {cell['head_ms']:9.3f}"
              f"  x{cell['ratio']:.3f}{flag}")
    for cell in broken:
        print(f"{cell['suite']:7} {' '.join(cell['cell']):60} timed in the base, not in the head  BROKEN")
    print(f"{len(cells)} cells, {len(slower)} more than {args.limit:.0%} slower, {len(broken)} broken")
    return 1 if slower or broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
