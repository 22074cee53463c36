"""Which kernels a fresh machine's first solve compiles, how long each took, and where in lapcli it
was asked for: CuPy's (its array operations, cached in CUPY_CACHE_DIR) and lapcli's own (NVRTC,
cached in LAPCLI_CACHE_DIR), both caches empty (new temporary folders). Then a second solve of a
fresh matrix of the same kind, whose compiles are counted apart. Needs a GPU and CuPy.

    python benchmarks/cold_compiles.py int-sap

Cases: int-sap, float-sap, forbidden (cuda-sap on 4096²: int32 uniform in [0, 409600), U[0, 1)
float64, floats with 1 % +inf), int-cuda (cuda, 4096² int32), rect (auto, 2000 × 6000 floats),
auto-small (auto, 1024² floats), points (solve_points, 20,000 2-D points a side), batch
(solve_batch, 500 × 24 × 24 float32). Record: docs/bench/cold-cub-h200-2026-11-30.txt."""

import os
import re
import sys
import tempfile
import time
import traceback

os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp()  # before CuPy reads it
os.environ["LAPCLI_CACHE_DIR"] = tempfile.mkdtemp()

import cupy.cuda.compiler as cupy_compiler  # noqa: E402
import numpy as np  # noqa: E402

import lapcli  # noqa: E402
import lapcli.cuda.compiler as lapcli_compiler  # noqa: E402

RECORDS: list[tuple[str, float, str, str]] = []  # (whose, seconds, kernel names, where in lapcli)


def asked_from() -> str:
    """The innermost three lapcli frames that led to a compile."""
    frames = [f for f in traceback.extract_stack() if "/lapcli/" in f.filename]
    return " < ".join(f"{f.filename.split('lapcli/')[-1]}:{f.lineno}" for f in frames[-3:][::-1]) or "?"


def timed(whose: str, compile_function, name_of):
    """``compile_function`` wrapped: each call recorded with its time and where it was asked for.
    (CuPy's Cython looks its compile up on the module at each call, so the wrapper sees them all.)"""
    def wrapper(first, *args, **kwargs):
        begin = time.perf_counter()
        result = compile_function(first, *args, **kwargs)
        RECORDS.append((whose, time.perf_counter() - begin, name_of(first), asked_from()))
        return result
    return wrapper


cupy_compiler._compile_module_with_cache = timed(
    "cupy", cupy_compiler._compile_module_with_cache,
    lambda source: ",".join(re.findall(r"__global__\s+void\s+(\w+)", source))[:60])
lapcli_compiler.nvrtc_compile = timed("lapcli", lapcli_compiler.nvrtc_compile, lambda label: label)


def solve(case: str, rng):
    floats = lambda shape: rng.random(shape)  # noqa: E731
    integers = lambda: rng.integers(0, 409600, (4096, 4096)).astype(np.int32)  # noqa: E731
    if case == "forbidden":
        cost = floats((4096, 4096))
        cost[rng.random(cost.shape) < 0.01] = np.inf
        return lapcli.solve(cost, solver="cuda-sap")
    return {
        "int-sap": lambda: lapcli.solve(integers(), solver="cuda-sap"),
        "float-sap": lambda: lapcli.solve(floats((4096, 4096)), solver="cuda-sap"),
        "int-cuda": lambda: lapcli.solve(integers(), solver="cuda"),
        "rect": lambda: lapcli.solve(floats((2000, 6000))),
        "auto-small": lambda: lapcli.solve(floats((1024, 1024))),
        "points": lambda: lapcli.solve_points(floats((20000, 2)), floats((20000, 2))),
        "batch": lambda: lapcli.solve_batch(floats((500, 24, 24)).astype(np.float32)),
    }[case]()


def main() -> None:
    case = sys.argv[1] if len(sys.argv) > 1 else "int-sap"
    rng = np.random.default_rng(7)
    begin = time.perf_counter()
    first = solve(case, rng)
    first_s, first_compiles = time.perf_counter() - begin, len(RECORDS)
    begin = time.perf_counter()
    solve(case, rng)
    second_s = time.perf_counter() - begin
    print("solver", first.report.solver, "certified", first.report.certified)
    counts = "; ".join(f"{whose} {sum(r[0] == whose for r in RECORDS)} in {sum(r[1] for r in RECORDS if r[0] == whose):.2f} s"
                       for whose in ("cupy", "lapcli"))
    print(f"## {case}: first solve {first_s:.2f} s, second {second_s:.2f} s ({len(RECORDS) - first_compiles} "
          f"compiles); compiles: {counts}")
    for whose, seconds, names, where in sorted(RECORDS, key=lambda r: -r[1]):
        print(f"{whose:6s} {seconds * 1e3:7.0f} ms  {names:60s} {where}")


if __name__ == "__main__":
    main()
