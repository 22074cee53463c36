"""Side-by-side benchmark: every solver solves the same matrices, warm, repeated, medians reported.

Time measured per solve: from the host array to the host assignment (``lapcli.solve`` returns only
after the device→host copy), so host→device copy, the solve and the copy back are included;
CUDA context creation and the first NVRTC compile are excluded by a warm-up before the sweep.
Objectives must agree across solvers in every cell: a mismatch is a failure, never a footnote.
"""

from __future__ import annotations

import datetime
import math
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from . import __version__
from .engines import registry
from .generate import generate, kind_dtype, uniform_high
from .problem import objective_tolerance

def grid_cells(sizes, ranges) -> tuple[tuple[int, float], ...]:
    return tuple((n, r) for r in ranges for n in sizes)


# A suite is a list of (n, R) cells.
SUITES: dict[str, tuple[tuple[int, float], ...]] = {
    # Kawtikwar–Cravens–Yang Tables IV–X
    "papers": grid_cells((256, 512, 1024, 2048, 4096, 8192), (0.001, 0.01, 0.1, 1, 10, 100, 1000)),
    "quick": grid_cells((16, 64, 128), (0.1, 10, 1000)),
    # the five points at which issue #3 compares with HyLAC's classical solver on an H100
    "hylac": ((1024, 1), (4096, 1), (4096, 100), (8192, 10), (8192, 1000)),
    "gpu-check": grid_cells((256, 1024, 4096), (1, 100)),
}


@dataclass
class BenchSettings:
    cells: tuple[tuple[int, float], ...]  # (n, R) pairs
    solvers: tuple[str, ...]
    dtypes: tuple[str, ...] | None = None  # None: the kind's own (int32 uniform, float64 the float kinds)
    kind: str = "uniform"
    repeat: int = 3
    warmup: int = 1
    seed: int = 0
    timeout: float | None = None
    baseline: str | None = None

    def __post_init__(self):
        if self.dtypes is None:
            self.dtypes = (kind_dtype(self.kind),)


@dataclass
class SolveTiming:
    n: int
    range_factor: float
    dtype: str
    solver: str
    status: str  # ok | timeout | error | skipped | mismatch
    times_ms: list[float] = field(default_factory=list)
    objective: Any = None
    steps: list[dict] = field(default_factory=list)
    message: str = ""

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None


class ObjectiveMismatch(Exception):
    """Solvers disagreed on the optimum of one matrix; ``results`` holds the whole sweep."""

    def __init__(self, message: str, results: list[SolveTiming]):
        super().__init__(message)
        self.results = results


# ----------------------------------------------------------------------------- solver runners
def bench_solvers() -> tuple[str, ...]:
    """Every engine of the registry, and ``auto`` (what users get)."""
    return registry.solver_choices(batch=False)  # single problems; the batch suite has its own


def lapcli_runner(solver: str) -> Callable:
    def run(cost, timeout):
        from .facade import solve

        solution = solve(cost, solver=solver, timeout=timeout)
        steps = [asdict(s) for s in solution.report.steps]
        return solution.objective, steps

    return run


def solver_available(name: str) -> tuple[bool, str]:
    if name == "auto":
        return True, ""
    return registry.get(name).available()


def default_runners() -> dict[str, Callable]:
    return {name: lapcli_runner(name) for name in bench_solvers()}


# ----------------------------------------------------------------------------- the sweep
def objectives_agree(a, b, cost) -> bool:
    if cost.dtype.kind in "biu":
        return int(a) == int(b)
    return abs(float(a) - float(b)) <= objective_tolerance(cost)


def bench_matrix(settings: BenchSettings, n: int, range_factor: float, dtype: str) -> np.ndarray:
    """The one matrix every solver of a cell solves (seeded by the cell, so cells differ).

    An integer ``dtype`` with a float kind is refused (ValueError), never truncated to zeros."""
    cell_seed = settings.seed * 1_000_003 + n * 7919 + round(range_factor * 1000)
    kind_dtype = dtype
    if settings.kind == "uniform" and np.dtype(dtype).kind == "i" and uniform_high(n, range_factor) > np.iinfo(dtype).max:
        kind_dtype = "int64"
    return generate(n, range_factor=range_factor, seed=cell_seed, kind=settings.kind, dtype=kind_dtype)


def run_bench(settings: BenchSettings, runners: dict[str, Callable] | None = None,
              on_progress: Callable[[str], None] | None = None) -> list[SolveTiming]:
    """Sweep cells (n, R) × dtypes × solvers. Raises ObjectiveMismatch after recording it."""
    runners = runners or default_runners()
    results: list[SolveTiming] = []
    gave_up: set[tuple[str, str, float]] = set()  # (solver, dtype, range) that timed out at a smaller n
    mismatches: list[str] = []
    for dtype in settings.dtypes:
        # one cell: every solver on the same matrix; by range, then n (so timeouts skip larger n)
        for n, range_factor in sorted(settings.cells, key=lambda cell: (cell[1], cell[0])):
            cost = bench_matrix(settings, n, range_factor, dtype)
            cell: list[SolveTiming] = []
            for solver in settings.solvers:
                timing = SolveTiming(n, range_factor, dtype, solver, "ok")
                if (solver, dtype, range_factor) in gave_up:
                    timing.status, timing.message = "skipped", "timed out at a smaller n"
                else:
                    time_one(runners[solver], cost, settings, timing)
                    if timing.status == "timeout":
                        gave_up.add((solver, dtype, range_factor))
                cell.append(timing)
                if on_progress:
                    on_progress(f"n={n} R={range_factor} {dtype} {solver}: {timing.status}")
            solved = [t for t in cell if t.status == "ok"]
            for other in solved[1:]:
                if not objectives_agree(solved[0].objective, other.objective, cost):
                    other.status = "mismatch"
                    mismatches.append(
                        f"n={n} R={range_factor} {dtype}: {solved[0].solver} found {solved[0].objective}, "
                        f"{other.solver} found {other.objective}"
                    )
            results.extend(cell)
    if mismatches:
        raise ObjectiveMismatch("; ".join(mismatches), results)
    return results


def time_one(runner: Callable, cost: np.ndarray, settings: BenchSettings, timing: SolveTiming) -> None:
    from .errors import SolverError

    try:
        for _ in range(settings.warmup):
            runner(cost, settings.timeout)
        for _ in range(settings.repeat):
            start = time.perf_counter()
            objective, steps = runner(cost, settings.timeout)
            elapsed = (time.perf_counter() - start) * 1e3
            timing.times_ms.append(elapsed)
            timing.objective, timing.steps = objective, steps
            if settings.timeout is not None and elapsed > settings.timeout * 1e3:
                timing.status, timing.message = "timeout", f"took {elapsed:.0f} ms"
                return
    except SolverError as error:
        timing.status = "timeout" if "time limit" in str(error) else "error"
        timing.message = str(error)
    except Exception as error:  # a peer's failure is a result to report, not a crash
        timing.status, timing.message = "error", f"{type(error).__name__}: {error}"


# ----------------------------------------------------------------------------- environment & outputs
def environment() -> dict[str, Any]:
    import scipy

    env: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "lapcli": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "platform": platform.platform(),
        "cpu": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import cupy

        env["cupy"] = cupy.__version__
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        env["device"] = name.decode() if isinstance(name, bytes) else str(name)
        env["driver"] = cupy.cuda.runtime.driverGetVersion()
        env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    except Exception as error:
        env["device"] = f"none ({type(error).__name__})"
    for module in ("lapx", "lap"):
        try:
            env[module] = getattr(__import__(module), "__version__", "installed")
        except ImportError:
            pass
    return env


def results_table_rows(results: list[SolveTiming], solvers: tuple[str, ...], baseline: str | None):
    """Rows (n, R, dtype, then per solver 'median ms' and speedups over the baseline)."""
    cells: dict[tuple, dict[str, SolveTiming]] = {}
    for t in results:
        cells.setdefault((t.dtype, t.range_factor, t.n), {})[t.solver] = t
    rows = []
    for (dtype, range_factor, n), by_solver in sorted(cells.items()):
        base = by_solver.get(baseline) if baseline else None
        row = [str(n), f"{range_factor:g}", dtype]
        for solver in solvers:
            t = by_solver.get(solver)
            if t is None or t.median_ms is None or t.status not in ("ok",):
                row.append(t.status if t else "-")
                continue
            text = f"{t.median_ms:.2f}"
            if base is not None and base.median_ms and solver != baseline and base.status == "ok":
                text += f" ({base.median_ms / t.median_ms:.2f}×)"
            row.append(text)
        rows.append(row)
    return rows


def write_json(path: str, settings: BenchSettings, results: list[SolveTiming], env: dict) -> None:
    import json

    from .io import write_bytes

    payload = {
        "environment": env,
        "settings": asdict(settings),
        "timing": "host array to host assignment (H2D + solve + D2H), warm, per repeat",
        "results": [asdict(r) | {"median_ms": r.median_ms} for r in results],
    }
    write_bytes(path, (json.dumps(payload, indent=1) + "\n").encode())


def write_csv(path: str, results: list[SolveTiming], env: dict) -> None:
    import csv
    import io

    from .io import write_bytes

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["n", "range", "dtype", "solver", "status", "repeat", "ms", "objective", "device"])
    for r in results:
        for i, ms in enumerate(r.times_ms or [None]):
            writer.writerow([r.n, r.range_factor, r.dtype, r.solver, r.status, i, ms, r.objective, env.get("device")])
    write_bytes(path, buffer.getvalue().encode())


def write_plot(path: str, results: list[SolveTiming], env: dict) -> None:
    """Time against n, one panel per range, log scales (needs matplotlib: lapcli[plot])."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .io import atomic_output

    ranges = sorted({r.range_factor for r in results})
    solvers = list(dict.fromkeys(r.solver for r in results))
    columns = min(4, len(ranges))
    rows = math.ceil(len(ranges) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows), squeeze=False)
    for ax, range_factor in zip(axes.flat, ranges):
        for solver in solvers:
            points = sorted((r.n, r.median_ms) for r in results
                            if r.solver == solver and r.range_factor == range_factor and r.status == "ok")
            if points:
                ax.plot(*zip(*points), marker="o", label=solver)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(f"R = {range_factor:g}·n")
        ax.set_xlabel("n")
        ax.set_ylabel("median ms")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(ranges):]:
        ax.axis("off")
    axes.flat[0].legend()
    fig.suptitle(f"lapcli bench on {env.get('device', '?')} ({env.get('date', '')[:10]})")
    fig.tight_layout()
    with atomic_output(path) as handle:
        fig.savefig(handle, format="png", dpi=110)
    plt.close(fig)
