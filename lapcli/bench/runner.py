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
from typing import Any, NamedTuple

import numpy as np

from .. import __version__
from ..engines import registry
from ..generate import FLOAT_KINDS, generate, kind_dtype, uniform_high
from ..problem import objective_tolerance

def grid_cells(sizes, ranges) -> tuple[tuple[int, float], ...]:
    return tuple((n, r) for r in ranges for n in sizes)


@dataclass(frozen=True)
class SuiteGroup:
    """Cells (n, R) of one kind, each solved in every dtype of ``dtypes``.

    ``kind`` None: the kind the command asks for (``--kind``, default uniform); ``dtypes`` None: the
    dtypes it asks for (``--dtypes``, default the kind's own). A suite whose groups fix their kind
    (or dtypes) refuses ``--kind`` (or ``--dtypes``). The float kinds ignore R (it only seeds the
    matrix): their groups use the single R = 1."""

    kind: str | None = None
    dtypes: tuple[str, ...] | None = None
    cells: tuple[tuple[int, float], ...] = ()

    def resolve(self, kind: str, dtypes: tuple[str, ...] | None) -> "SuiteGroup":
        """This group with its open kind and dtypes filled from the command's."""
        group_kind = self.kind or kind
        group_dtypes = self.dtypes or dtypes or (kind_dtype(group_kind),)
        return SuiteGroup(group_kind, tuple(group_dtypes), tuple(self.cells))


def open_suite(cells) -> tuple[SuiteGroup, ...]:
    """A suite of one group that takes ``--kind`` and ``--dtypes`` (uniform int32 unless told)."""
    return (SuiteGroup(None, None, tuple(cells)),)


ISSUE_14_SIZES = (1024, 2048, 4096, 8192)

# A suite is a tuple of groups, each a kind, its dtypes and its (n, R) cells.
SUITES: dict[str, tuple[SuiteGroup, ...]] = {
    # Kawtikwar–Cravens–Yang Tables IV–X
    "papers": open_suite(grid_cells((256, 512, 1024, 2048, 4096, 8192), (0.001, 0.01, 0.1, 1, 10, 100, 1000))),
    "quick": open_suite(grid_cells((16, 64, 128), (0.1, 10, 1000))),
    # the five points at which issue #3 compares with HyLAC's classical solver on an H100
    "hylac": open_suite(((1024, 1), (4096, 1), (4096, 100), (8192, 10), (8192, 1000))),
    "gpu-check": open_suite(grid_cells((256, 1024, 4096), (1, 100))),
    # issue #14: integers uniform in [0, R·n), U[0, 1) in float32 and float64, squared 2-D distances
    "ranges": (
        SuiteGroup("uniform", ("int32",), grid_cells(ISSUE_14_SIZES, (0.1, 1, 10, 100, 1000))),
        SuiteGroup("float", ("float32", "float64"), grid_cells(ISSUE_14_SIZES, (1,))),
        SuiteGroup("geometric", ("float64",), grid_cells(ISSUE_14_SIZES, (1,))),
    ),
}


def fixed_options(groups: tuple[SuiteGroup, ...]) -> tuple[str, ...]:
    """The options a suite sets itself ("kind", "dtypes"): giving them with the suite is an error."""
    return tuple(name for name in ("kind", "dtypes") if any(getattr(g, name) is not None for g in groups))


def baseline_names(baseline: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The solvers a speedup is relative to: one name, or several (the fastest of them per cell)."""
    if baseline is None:
        return ()
    return (baseline,) if isinstance(baseline, str) else tuple(baseline)


@dataclass
class BenchSettings:
    """One kind: ``cells``, ``kind`` and ``dtypes``. Several kinds (a suite such as ``ranges``):
    ``groups`` (each with its kind and dtypes set), ``cells`` empty, ``kind`` and ``dtypes`` None.
    ``groups`` is filled either way; the sweep reads only it."""

    cells: tuple[tuple[int, float], ...]  # (n, R) pairs
    solvers: tuple[str, ...]
    dtypes: tuple[str, ...] | None = None  # None: the kind's own (int32 uniform, float64 the float kinds)
    kind: str | None = "uniform"
    repeat: int = 3
    warmup: int = 1
    seed: int = 0
    timeout: float | None = None
    baseline: str | tuple[str, ...] | None = None  # several: the fastest of them in each cell
    groups: tuple[SuiteGroup, ...] = ()
    suite: str | None = None  # the preset the cells came from, if any (a label for the records)

    def __post_init__(self):
        if self.groups:
            if self.cells:
                raise ValueError("give cells (one kind) or groups, not both")
            self.groups = tuple(self.groups)
            if any(g.kind is None or g.dtypes is None for g in self.groups):
                raise ValueError("every group of the settings needs its kind and dtypes (SuiteGroup.resolve)")
            if len(self.groups) == 1:  # one group is one kind: the single-kind fields say it
                (group,) = self.groups
                self.cells, self.kind, self.dtypes = group.cells, group.kind, group.dtypes
            else:
                self.kind = self.dtypes = None
            return
        if self.kind is None:
            raise ValueError("one kind (kind=...) or groups")
        if self.dtypes is None:
            self.dtypes = (kind_dtype(self.kind),)
        self.groups = (SuiteGroup(self.kind, tuple(self.dtypes), tuple(self.cells)),)

    @property
    def cell_count(self) -> int:
        """Matrices in the sweep (cells × dtypes over the groups); each is solved by every solver."""
        return sum(len(g.cells) * len(g.dtypes) for g in self.groups)


@dataclass
class SolveTiming:
    n: int
    range_factor: float
    dtype: str
    solver: str
    status: str  # ok | timeout | error | skipped | mismatch
    kind: str = "uniform"  # how the matrix was drawn (lapcli.generate.KINDS)
    engine: str = ""  # the engine that ran: auto's choice (its report's solver), else the solver itself
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


class RunOutcome(NamedTuple):
    """What a runner returns for one solve. A runner may also return the pair (objective, steps):
    the engine is then taken to be the solver it runs under."""

    objective: Any
    steps: list[dict]
    engine: str


def lapcli_runner(solver: str) -> Callable:
    def run(cost, timeout) -> RunOutcome:
        from ..facade import solve

        solution = solve(cost, solver=solver, timeout=timeout)
        steps = [asdict(s) for s in solution.report.steps]
        return RunOutcome(solution.objective, steps, solution.report.solver if solver == "auto" else solver)

    return run


def solver_available(name: str) -> tuple[bool, str]:
    if name == "auto":
        return True, ""
    return registry.get(name).available()


def too_wide(solver: str, n: int) -> int | None:
    """The engine's column limit when n exceeds it (cuda-sap: 2048), else None."""
    if solver == "auto" or solver not in registry.ENGINES:
        return None
    limit = registry.get(solver).capabilities.max_columns
    return limit if limit is not None and n > limit else None


def peer_runner(name: str) -> Callable:
    """The peers as their users call them: scipy's ``linear_sum_assignment`` and lapx's ``lapjv``
    on the array itself, not through lapcli.solve (whose input checks, work matrix and objective
    cost ~2.4 ms at n = 1024 on a CI core: 13.1 against lapjv's own 10.6 ms). The bench's matrices
    are finite, so neither needs lapcli's handling of forbidden entries."""
    def run(cost, timeout) -> RunOutcome:
        if name == "scipy":
            from scipy.optimize import linear_sum_assignment

            rows, cols = linear_sum_assignment(cost)
        else:
            from ..engines.cpu.lapx import lapx_module

            _, column_of_row, _ = lapx_module().lapjv(np.asarray(cost, dtype=np.float64),
                                                      extend_cost=cost.shape[0] != cost.shape[1])
            rows = np.flatnonzero(column_of_row >= 0)
            cols = column_of_row[rows]
        exact = cost.dtype.kind in "biu"
        chosen = cost[rows, cols].astype(np.int64 if exact else np.float64)  # float32 sums in float64, as lapcli's
        objective = int(chosen.sum()) if exact else float(chosen.sum())
        return RunOutcome(objective, [], name)

    return run


PEERS = ("scipy", "lapx")  # timed as direct library calls (peer_runner)


def default_runners() -> dict[str, Callable]:
    return {name: peer_runner(name) if name in PEERS else lapcli_runner(name) for name in bench_solvers()}


# ----------------------------------------------------------------------------- the sweep
def objectives_agree(a, b, cost) -> bool:
    if cost.dtype.kind in "biu":
        return int(a) == int(b)
    return abs(float(a) - float(b)) <= objective_tolerance(cost)


def bench_matrix(settings: BenchSettings, n: int, range_factor: float, dtype: str,
                 kind: str | None = None) -> np.ndarray:
    """The one matrix every solver of a cell solves (seeded by the cell, so cells differ).

    ``kind``: the cell's group's (default: the settings' one kind). An integer ``dtype`` with a
    float kind is refused (ValueError), never truncated to zeros."""
    kind = kind or settings.kind
    cell_seed = settings.seed * 1_000_003 + n * 7919 + round(range_factor * 1000)
    kind_dtype = dtype
    if kind == "uniform" and np.dtype(dtype).kind == "i" and uniform_high(n, range_factor) > np.iinfo(dtype).max:
        kind_dtype = "int64"
    return generate(n, range_factor=range_factor, seed=cell_seed, kind=kind, dtype=kind_dtype)


def run_bench(settings: BenchSettings, runners: dict[str, Callable] | None = None,
              on_progress: Callable[[str], None] | None = None) -> list[SolveTiming]:
    """Sweep groups × dtypes × cells (n, R) × solvers. Raises ObjectiveMismatch after recording it."""
    runners = runners or default_runners()
    results: list[SolveTiming] = []
    # (solver, kind, dtype, range) that timed out at a smaller n
    gave_up: set[tuple[str, str, str, float]] = set()
    mismatches: list[str] = []
    for group in settings.groups:
        kind = group.kind
        label = f" {kind}" if len(settings.groups) > 1 else ""
        for dtype in group.dtypes:
            # one cell: every solver on the same matrix; by range, then n (so timeouts skip larger n)
            for n, range_factor in sorted(group.cells, key=lambda cell: (cell[1], cell[0])):
                cost = bench_matrix(settings, n, range_factor, dtype, kind)
                cell: list[SolveTiming] = []
                for solver in settings.solvers:
                    timing = SolveTiming(n, range_factor, dtype, solver, "ok", kind=kind)
                    if (solver, kind, dtype, range_factor) in gave_up:
                        timing.status, timing.message = "skipped", "timed out at a smaller n"
                    elif too_wide(solver, n):
                        timing.status, timing.message = "skipped", f"{solver} takes at most {too_wide(solver, n)} columns"
                    else:
                        time_one(runners[solver], cost, settings, timing)
                        if timing.status == "timeout":
                            gave_up.add((solver, kind, dtype, range_factor))
                    cell.append(timing)
                    if on_progress:
                        on_progress(f"n={n} R={range_factor}{label} {dtype} {solver}: {timing.status}")
                solved = [t for t in cell if t.status == "ok"]
                for other in solved[1:]:
                    if not objectives_agree(solved[0].objective, other.objective, cost):
                        other.status = "mismatch"
                        mismatches.append(
                            f"n={n} R={range_factor}{label} {dtype}: {solved[0].solver} found {solved[0].objective}, "
                            f"{other.solver} found {other.objective}"
                        )
                results.extend(cell)
    if mismatches:
        raise ObjectiveMismatch("; ".join(mismatches), results)
    return results


def time_one(runner: Callable, cost: np.ndarray, settings: BenchSettings, timing: SolveTiming) -> None:
    from ..errors import SolverError

    engines: list[str] = []  # per repeat; auto could choose differently from one repeat to the next
    try:
        for _ in range(settings.warmup):
            runner(cost, settings.timeout)
        for _ in range(settings.repeat):
            start = time.perf_counter()
            objective, steps, *engine = runner(cost, settings.timeout)  # RunOutcome, or (objective, steps)
            elapsed = (time.perf_counter() - start) * 1e3
            timing.times_ms.append(elapsed)
            timing.objective, timing.steps = objective, steps
            engines.append(engine[0] if engine and engine[0] else timing.solver)
            timing.engine = "/".join(dict.fromkeys(engines))
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


def results_kinds(results: list[SolveTiming]) -> tuple[str, ...]:
    """The kinds of the results, in the order they were run."""
    return tuple(dict.fromkeys(t.kind for t in results))


def results_table_columns(results: list[SolveTiming], solvers: tuple[str, ...]) -> tuple[str, ...]:
    """The header of :func:`results_table_rows`: a ``kind`` column only when the kinds differ."""
    kind = ("kind",) if len(results_kinds(results)) > 1 else ()
    return ("n", "R", *kind, "dtype", *solvers)


def baseline_title(baseline: str | tuple[str, ...] | None) -> str:
    names = baseline_names(baseline)
    if len(names) > 1:
        return f"the faster of {', '.join(names)} in each cell" if len(names) == 2 else \
            f"the fastest of {', '.join(names)} in each cell"
    return names[0] if names else "nothing"


def fastest_baseline(by_solver: dict[str, SolveTiming], baseline: str | tuple[str, ...] | None) -> SolveTiming | None:
    """The baseline of one cell: the fastest of the baseline solvers that solved it."""
    solved = [by_solver[name] for name in baseline_names(baseline)
              if name in by_solver and by_solver[name].status == "ok" and by_solver[name].median_ms]
    return min(solved, key=lambda t: t.median_ms) if solved else None


def range_label(kind: str, range_factor: float, ranges_of_kind: set[float]) -> str:
    """R as the table shows it: '—' for a float kind (R does not shape its values; it only seeds
    the matrix), unless the results hold that kind at several R, which then tell the rows apart."""
    if kind in FLOAT_KINDS and len(ranges_of_kind) == 1:
        return "—"
    return f"{range_factor:g}"


def results_table_rows(results: list[SolveTiming], solvers: tuple[str, ...], baseline: str | tuple[str, ...] | None):
    """Rows (n, R, kind when the kinds differ, dtype, then per solver 'median ms' and the speedup
    over the baseline; for ``auto`` also the engine it ran). Columns: :func:`results_table_columns`."""
    kinds = results_kinds(results)
    several_kinds = len(kinds) > 1
    base_names = baseline_names(baseline)
    ranges: dict[str, set[float]] = {}
    cells: dict[tuple, dict[str, SolveTiming]] = {}
    for t in results:
        ranges.setdefault(t.kind, set()).add(t.range_factor)
        cells.setdefault((kinds.index(t.kind), t.dtype, t.range_factor, t.n), {})[t.solver] = t
    rows = []
    for (kind_index, dtype, range_factor, n), by_solver in sorted(cells.items()):
        kind = kinds[kind_index]
        base = fastest_baseline(by_solver, baseline)
        row = [str(n), range_label(kind, range_factor, ranges[kind])]
        if several_kinds:
            row.append(kind)
        row.append(dtype)
        for solver in solvers:
            t = by_solver.get(solver)
            if t is None or t.median_ms is None or t.status not in ("ok",):
                row.append(t.status if t else "-")
                continue
            text = f"{t.median_ms:.2f}"
            if base is not None and solver not in base_names:
                text += f" ({base.median_ms / t.median_ms:.2f}×)"
            if solver == "auto" and t.engine:
                text += f" {t.engine}"
            row.append(text)
        rows.append(row)
    return rows


def write_json(path: str, settings: BenchSettings, results: list[SolveTiming], env: dict) -> None:
    import json

    from ..io import write_bytes

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

    from ..io import write_bytes

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["n", "range", "dtype", "solver", "status", "repeat", "ms", "objective", "device", "kind", "engine"])
    for r in results:
        for i, ms in enumerate(r.times_ms or [None]):
            writer.writerow([r.n, r.range_factor, r.dtype, r.solver, r.status, i, ms, r.objective, env.get("device"),
                             r.kind, r.engine])
    write_bytes(path, buffer.getvalue().encode())


def write_plot(path: str, results: list[SolveTiming], env: dict) -> None:
    """Time against n, one panel per range (per kind and range when the kinds differ; one panel
    per float kind, whose R does not matter), log scales (needs matplotlib: lapcli[plot])."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..io import atomic_output

    kinds = results_kinds(results)
    panels = sorted({(kinds.index(r.kind), r.range_factor) for r in results})
    solvers = list(dict.fromkeys(r.solver for r in results))
    columns = min(4, len(panels))
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows), squeeze=False)
    for ax, (kind_index, range_factor) in zip(axes.flat, panels):
        kind = kinds[kind_index]
        panel = [r for r in results if r.kind == kind and r.range_factor == range_factor and r.status == "ok"]
        dtypes = list(dict.fromkeys(r.dtype for r in panel))
        for solver in solvers:
            for dtype in dtypes:
                points = sorted((r.n, r.median_ms) for r in panel if r.solver == solver and r.dtype == dtype)
                if points:
                    ax.plot(*zip(*points), marker="o", label=solver if len(dtypes) == 1 else f"{solver} {dtype}")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        kind_ranges = {r.range_factor for r in results if r.kind == kind}
        if kind in FLOAT_KINDS and len(kind_ranges) == 1:
            title = kind  # R does not shape these values
        else:
            title = f"{kind}, R = {range_factor:g}·n" if len(kinds) > 1 else f"R = {range_factor:g}·n"
        ax.set_title(title)
        ax.set_xlabel("n")
        ax.set_ylabel("median ms")
        ax.grid(True, which="both", alpha=0.3)
        if len(dtypes) > 1:
            ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    axes.flat[0].legend()
    fig.suptitle(f"lapcli bench on {env.get('device', '?')} ({env.get('date', '')[:10]})")
    fig.tight_layout()
    with atomic_output(path) as handle:
        fig.savefig(handle, format="png", dpi=110)
    plt.close(fig)
