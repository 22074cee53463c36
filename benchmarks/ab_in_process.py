"""Time two checkouts of lapcli in ONE process, calls interleaved round by round: no process-level noise.

Usage, on a GPU machine (each tree a plain copy of the package, e.g. ``git archive REV | tar -x``):

    python3 benchmarks/ab_in_process.py --base OLD_TREE --head NEW_TREE

Separate processes of one machine differ by ±15 % on calls of a few milliseconds (where the process
lands, its memory), which hides a 5 % change; here the base tree is copied under the package name
``lapcli_base`` (its absolute ``"lapcli.`` strings rewritten) and imported beside ``lapcli``, and each
case alternates between the two for ten rounds. Prints the median of every call per tree, and for
single matrices the host time outside the report's copy and kernel events. Needs CuPy and a GPU.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path


def import_base(tree: Path):
    """The base tree's package, copied as ``lapcli_base`` and imported."""
    folder = Path(tempfile.mkdtemp(prefix="lapcli-base-"))
    shutil.copytree(tree / "lapcli", folder / "lapcli_base")
    for path in (folder / "lapcli_base").rglob("*.py"):
        text = path.read_text()
        path.write_text(re.sub(r'"lapcli\.', '"lapcli_base.', text).replace('files("lapcli")', 'files("lapcli_base")'))
    sys.path.insert(0, str(folder))
    import lapcli_base

    return lapcli_base


parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--base", type=Path, required=True)
parser.add_argument("--head", type=Path, required=True)
parser.add_argument("--only", default="", help="time only the cases whose name starts with this")
args = parser.parse_args()
sys.path.insert(0, str(args.head.resolve()))
import cupy  # noqa: E402
import numpy as np  # noqa: E402

import lapcli  # noqa: E402

lapcli_base = import_base(args.base.resolve())
rng = np.random.default_rng(3)
cases = {}
for b, n in ((10000, 16), (2000, 64), (500, 256), (64, 1024)):  # the batch suite's cells
    for kind in ("int", "float"):
        host_stack = (rng.integers(0, 1000, (b, n, n)).astype(np.int32) if kind == "int"
                      else rng.random((b, n, n)).astype(np.float32))
        cases[f"h2d {kind} {b}x{n}"] = host_stack
        cases[f"d2d {kind} {b}x{n}"] = cupy.asarray(host_stack)
singles = {f"single {n} R={r}": rng.integers(0, max(1, int(r * n)), (n, n)).astype(np.int32)
           for n, r in ((256, 0.1), (512, 0.01), (1024, 0.01), (1024, 1000), (2048, 0.1), (4096, 1), (4096, 100),
                        (8192, 10), (8192, 1000))}
singles["single 1024 float64"] = rng.random((1024, 1024))
singles["single 1024 float32"] = rng.random((1024, 1024)).astype(np.float32)
singles["single 1024 R=1"] = rng.integers(0, 1024, (1024, 1024)).astype(np.int32)
# the HyLAC suite's stepwise baseline and cuda-sap's cells: their own solvers
solvers = {f"stepwise {n} R={r}": "cuda-stepwise" for n, r in ((1024, 1), (4096, 1), (4096, 100))}
singles.update({name: rng.integers(0, int(r * n), (n, n)).astype(np.int32)
                for name, (n, r) in zip(solvers, ((1024, 1), (4096, 1), (4096, 100)))})
solvers["sap 1024 R=1000"] = "cuda-sap"
singles["sap 1024 R=1000"] = rng.integers(0, 1000 * 1024, (1024, 1024)).astype(np.int32)
host = {"base": [], "head": []}
def timeit(fn, arg, count, label=None):
    ts = []
    for _ in range(count):
        t = time.perf_counter(); out = fn(arg); ts.append(time.perf_counter() - t)
        if label and hasattr(out, "row_ind"):
            d = out.report.details
            host[label].append(ts[-1] * 1e3 - sum(d.get(k, 0) for k in ("h2d_ms", "kernel_ms", "d2h_ms")))
    return ts
results = {}
for name, stack in {**cases, **singles}.items():
    if not name.startswith(args.only):
        continue
    solver = solvers.get(name) or ("cuda" if name.startswith("single") and "R=" in name and "1000" not in name
                                   else "auto")
    fns = {"base": (lambda a: lapcli_base.solve_batch(a)) if name in cases else (lambda a: lapcli_base.solve(a, solver=solver)),
           "head": (lambda a: lapcli.solve_batch(a)) if name in cases else (lambda a: lapcli.solve(a, solver=solver))}
    host["base"].clear(); host["head"].clear()
    fns["head"](stack); fns["base"](stack)  # compiles and first allocations
    t0 = time.perf_counter(); fns["head"](stack); first = time.perf_counter() - t0
    count = max(2, min(100, int(0.15 / max(first, 1e-6))))  # ~0.15 s a round
    for f in fns.values():
        timeit(f, stack, count // 2)
    times = {"base": [], "head": []}
    for round_ in range(10):
        for label in (("base", "head") if round_ % 2 == 0 else ("head", "base")):
            times[label] += timeit(fns[label], stack, count, label)
    med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
    extra = ""
    if host["base"]:
        hb, hh = (sorted(host[k])[len(host[k]) // 2] for k in ("base", "head"))
        extra = f"   host outside h2d/kernel/d2h: base {hb:.3f} head {hh:.3f}"
    print(f"{name:24} base {med['base']:8.4f} ms  head {med['head']:8.4f} ms  head/base {med['head'] / med['base']:.3f}{extra}", flush=True)
