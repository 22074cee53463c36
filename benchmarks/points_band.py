"""Engine ``sorted``'s band programme on the GPU (lapcli.cuda.sorted_band) for 1-D point sets of
different sizes: a JSON line a size with the wall seconds of ``band_pairs`` on host-sorted sides,
its two kernels' shares (rows, read-back; each launch synchronised before and after), and the wall
seconds of ``solve_points`` under ``auto`` (host arrays, certified), medians of ``--repeat`` after a
warm-up solve. Rows and columns U[0, 1) (seed 9), sqeuclidean. Whichever lapcli is first on the
path is timed, so two trees compare by running it with each on PYTHONPATH:

    python benchmarks/points_band.py --label new 65536x65600 1048576x1048640 [--repeat 3]

Needs a GPU.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

SIZES = ["3000x4500", "65536x65600", "262144x262208", "1048576x1048640", "16384x24576", "65536x98304",
         "1000x1000000", "524288x786432"]


class Timed:
    """A kernel whose launches add their synchronised wall time to ``spent[name]``."""

    def __init__(self, name, kernel, spent):
        self.name, self.kernel, self.spent = name, kernel, spent

    def __getattr__(self, attr):
        return getattr(self.kernel, attr)

    def launch(self, *args, **kwargs):
        import cupy

        cupy.cuda.Device().synchronize()
        began = time.perf_counter()
        self.kernel.launch(*args, **kwargs)
        cupy.cuda.Device().synchronize()
        self.spent[self.name] += time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", default=SIZES, help="KxM, K ≤ M (default: eight sizes)")
    parser.add_argument("--label", default="", help="a name for the tree timed, copied into each line")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    import lapcli
    from lapcli.cuda import sorted_band as device_band

    spent = {"rows": 0.0, "back": 0.0}
    loaded = device_band.load

    def timed_load(program):
        kernels, compile_ms = loaded(program)
        return {name: Timed(name, kernel, spent) for name, kernel in kernels.items()}, compile_ms

    rng = np.random.default_rng(9)
    lapcli.solve_points(rng.random((3000, 1)), rng.random((4500, 1)))  # compiles both kernels
    for size in args.sizes:
        k, m = (int(side) for side in size.split("x"))
        x, y = np.sort(rng.random((k, 1)), axis=0), np.sort(rng.random((m, 1)), axis=0)
        band, split = [], []
        device_band.load = timed_load
        try:
            for _ in range(args.repeat):
                spent.update(rows=0.0, back=0.0)
                began = time.perf_counter()
                device_band.band_pairs(x, y, "sqeuclidean", 2.0, 1.0)
                band.append(time.perf_counter() - began)
                split.append((spent["rows"], spent["back"]))
        finally:
            device_band.load = loaded
        solve = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            solution = lapcli.solve_points(rng.random((k, 1)), rng.random((m, 1)))
            solve.append(time.perf_counter() - began)
        print(json.dumps({"tree": args.label, "k": k, "m": m, "band_s": round(float(np.median(band)), 4),
                          "rows_s": round(float(np.median([rows for rows, _ in split])), 4),
                          "back_s": round(float(np.median([back for _, back in split])), 4),
                          "solve_s": round(float(np.median(solve)), 4), "solver": solution.report.solver,
                          "certified": solution.report.certified,
                          "steps_ms": [[step.name, round(step.ms, 1)] for step in solution.report.steps]}),
              flush=True)


if __name__ == "__main__":
    main()
