"""batch_linear_assignment without a GPU against a plain scipy loop, ``[linear_sum_assignment(c)
for c in costs]``: a ragged list of 1000 float64 members of uniform shapes 1..40 × 1..40 (U[0, 1)
costs), the same shapes as int64 (0..999), and the stacks 4000 × 24 × 24 and 1000 × 64 × 64.
Each case runs in several fresh processes (the OS may put both of the engine's threads on one
core in one process and not in the next), loop and batch interleaved in each; a process prints
its medians in ms, the parent each case's range across processes as one JSON line. A list's
first batch call starts the engine's worker process (lapcli.engines.cpu.member_process); each
process waits until it has loaded, as a training loop's later steps find it, and says whether its
timed calls had it:

    PYTHONPATH=<tree> python benchmarks/cpu_ragged.py [processes] [calls]

(defaults 6 and 21; the stacks take a third of the calls).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

CASES = ("float64 list", "int64 list", "4000x24x24", "1000x64x64")


def costs(case: str, seed: int):
    import numpy as np

    rng = np.random.default_rng(seed)
    shapes = [(int(r), int(c)) for r, c in rng.integers(1, 41, (1000, 2))]
    if case == "float64 list":
        return [rng.random(shape) for shape in shapes]
    if case == "int64 list":
        return [rng.integers(0, 1000, shape) for shape in shapes]
    batch, n, m = (int(x) for x in case.split("x"))
    return rng.random((batch, n, m))


def one_process(case: str, calls: int, seed: int) -> None:
    from scipy.optimize import linear_sum_assignment

    import lapcli
    from lapcli.engines.cpu import member_process

    problems = costs(case, seed)
    loop = lambda: [linear_sum_assignment(c) for c in problems]  # noqa: E731
    batch = lambda: lapcli.batch_linear_assignment(problems)  # noqa: E731
    for run in (loop, batch, loop, batch):  # imports, the helper thread, the buffers, the worker's start
        run()
    worker = member_process.worker(start=False)
    started = member_process._WORKERS.get(os.getpid())
    if worker is None and started is not None:  # a list's first call starts it: wait until it has loaded
        started.ready.wait(10)
        batch()
        worker = member_process.worker(start=False)
    times = {"loop": [], "batch": []}
    for _ in range(calls):
        for name, run in (("loop", loop), ("batch", batch)):
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    print(json.dumps({**{name: round(statistics.median(t) * 1e3, 2) for name, t in times.items()},
                      "worker process": worker is not None}))


def main(processes: int, calls: int) -> None:
    for case in CASES:
        runs = []
        for seed in range(processes):
            count = calls if "list" in case else max(3, calls // 3)
            out = subprocess.run([sys.executable, __file__, "--one", case, str(count), str(seed)],
                                 capture_output=True, text=True, check=True).stdout
            runs.append(json.loads(out))
        ranges = {name: [min(r[name] for r in runs), max(r[name] for r in runs)] for name in ("loop", "batch")}
        slower = sum(r["batch"] > r["loop"] for r in runs)
        workers = sum(r["worker process"] for r in runs)
        print(json.dumps({"case": case, **ranges, "processes": processes, "batch slower in": slower,
                          "worker process in": workers}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one_process(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main(*(int(a) for a in sys.argv[1:3]))
