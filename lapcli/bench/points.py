"""``lap bench --suite points``: two point sets matched by every runner, host arrays in, certified
answers out (lapcli.solve_points).

A cell is n points a side, d = 2, of one kind (lapcli.generate.generate_points: ``uniform`` or
``clustered``; the two sets seeded apart) and one metric. Runners (skipped where they cannot run
here, and above the size where they stop being useful):

- ``auto``       ``solve_points`` as a user calls it
- ``cuda-sap``   the costs computed on the GPU from the coordinates (no matrix)
- ``dense``      the same costs as a matrix (``solve(cdist(a, b), solver="cuda-sap")``: the
                 classical kernel's auction, then the searches), up to 16,384
- ``scipy``      the cdist matrix and scipy, up to 4,096 (14 s at 8,192 on the H100 machine)

Every runner's objective is compared with the first one's (relative 1e-9). Times are wall
clock around the whole call, medians of ``repeat`` after ``warmup`` calls (above 8,192 one timed
call and no warm-up call: there ``auto`` and ``cuda-sap`` load their kernels for the cell's metric
and solve a 32,768-point square of it first, :func:`load_point_programs`, so that the first large
cell of a metric times neither their compilation nor that of CuPy's own kernels the engine calls).
Each call has a time limit (``timeout``, default CALL_LIMIT_S): a cell past it reads "timeout"
with the time of the call that stopped (an engine that cannot stop inside a solve, scipy, stops at
its certificate's pass or is judged by its time afterwards), and the suite goes on (the auction's
slow shapes, docs/points.md, would otherwise hold it).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

POINT_CELLS: tuple[tuple[int, str, str], ...] = (  # (n, kind, metric)
    *((n, "uniform", "sqeuclidean") for n in (2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)),
    *((n, kind, metric) for n in (8192, 65536)
      for kind, metric in (("uniform", "euclidean"), ("uniform", "cityblock"), ("clustered", "sqeuclidean"))),
    *((n, "clustered", "sqeuclidean") for n in (32768, 131072, 262144)))  # beside 65,536: where the price wars were
RUNNER_LIMITS = {"dense": 16384, "scipy": 4096}  # the largest n each runs
WARM_UP_TO = 8192  # larger cells are timed without a warm-up call
CALL_LIMIT_S = 120.0  # one solve's time limit, unless the caller gives one


@dataclass
class PointTiming:
    n: int
    kind: str
    metric: str
    runner: str
    status: str  # ok | error | timeout | skipped | mismatch
    engine: str = ""
    times_ms: list[float] = field(default_factory=list)
    objective: float | None = None
    message: str = ""

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None


def point_runners() -> dict[str, Callable]:
    """runner name -> f(a, b, metric, timeout) -> Solution."""
    from .. import pipeline, pipeline_points

    def dense(a, b, metric, timeout):
        from ..points import distance_matrix

        return pipeline.solve(distance_matrix(a, b, metric), solver="cuda-sap", timeout=timeout)

    return {
        "auto": lambda a, b, metric, timeout: pipeline_points.solve_points(a, b, metric, certify=True, timeout=timeout),
        "cuda-sap": lambda a, b, metric, timeout: pipeline_points.solve_points(a, b, metric, solver="cuda-sap",
                                                                        timeout=timeout),
        "dense": dense,
        "scipy": lambda a, b, metric, timeout: pipeline_points.solve_points(a, b, metric, solver="scipy", certify=True,
                                                                     timeout=timeout),
    }


# The points runners that need engine cuda-sap (the GPU): the others run anywhere.
GPU_RUNNERS = ("cuda-sap", "dense")


def runners_here(runners: dict) -> tuple[tuple[str, ...], str | None]:
    """(the runners that can run on this machine, why the GPU ones cannot, or None where they can)."""
    from ..engines import registry

    ok, why = registry.get("cuda-sap").available()
    return tuple(name for name in runners if ok or name not in GPU_RUNNERS), (None if ok else why)


def runner_limits() -> dict[str, int]:
    """The largest n each runner runs on this machine: RUNNER_LIMITS, and ``auto`` without the GPU
    searches solves the cdist matrix with scipy, so it stops where scipy does (at 65,536 points
    that matrix alone is 34 GB)."""
    from ..engines import registry

    limits = dict(RUNNER_LIMITS)
    if not registry.get("cuda-sap").available()[0]:
        limits["auto"] = RUNNER_LIMITS["scipy"]
    return limits


def runs(limits: dict[str, int], name: str, n: int) -> bool:
    """Whether runner ``name`` runs a cell of ``n`` points under ``limits`` (runner_limits)."""
    return n <= limits.get(name, n)


def load_point_programs(name: str, metric: str) -> None:
    """Load what runner ``name`` runs on a large 2-D cell of ``metric`` (``auto`` and ``cuda-sap``:
    engine cuda-sap's auction and searches on the coordinates), where that engine can run here, and
    solve a square of ``metric`` with it as large as the auction's warm start needs
    (sap_warm.WARM_FROM): CuPy compiles its own kernels (the tiles' sort, fills, reductions, the
    warm start's sample matrix and reach) at their first call, which sap_points.load_programs
    does not load (on a fresh H200 the first warm start took 13.5 s, later ones 0.1-0.3 s;
    docs/points.md)."""
    if name not in ("auto", "cuda-sap"):
        return
    from ..engines import registry

    if registry.get("cuda-sap").available()[0]:
        from ..engines.cuda import sap_points, sap_warm
        from ..generate import generate_points
        from ..pipeline_points import solve_points

        sap_points.load_programs(metric, 2)
        n = sap_warm.WARM_FROM
        solve_points(generate_points(n, 2, seed=1), generate_points(n, 2, seed=2), metric, solver="cuda-sap",
                     timeout=CALL_LIMIT_S)


def run_points_bench(cells, runners: dict, chosen, *, repeat: int, warmup: int, seed: int,
                     on_progress=None, timeout: float | None = None,
                     load_programs: Callable[[str, str], None] | None = None) -> list[PointTiming]:
    """Time ``chosen`` runners on ``cells`` (module docstring). ``load_programs(runner, metric)``
    stands for the warm-up of cells above WARM_UP_TO (where ``warmup`` asks for one): called once
    for each runner and metric before the first such cell."""
    from ..errors import InfeasibleError, LapInputError, SolverError, SolverUnavailable
    from ..generate import generate_points
    from .suites import ms_text

    timeout = timeout or CALL_LIMIT_S
    limits = runner_limits()
    results = []
    loaded = set()  # (runner, metric) whose kernels load_programs loaded
    for n, kind, metric in cells:
        a = generate_points(n, 2, kind=kind, seed=seed)
        b = generate_points(n, 2, kind=kind, seed=seed + 1)
        reference = None
        for name in chosen:
            timing = PointTiming(n, kind, metric, name, "ok")
            results.append(timing)
            if on_progress:
                on_progress(f"{name} n={n} {kind} {metric}")
            if not runs(limits, name, n):
                timing.status, timing.message = "skipped", f"above n = {limits[name]}"
                continue
            began = None  # when the runner's last call began (not the kernels' load)
            try:
                if n > WARM_UP_TO and warmup and load_programs and (name, metric) not in loaded:
                    load_programs(name, metric)
                    loaded.add((name, metric))
                warm = warmup if n <= WARM_UP_TO else 0
                for call in range(warm + (repeat if n <= WARM_UP_TO else 1)):
                    began = time.perf_counter()
                    solution = runners[name](a, b, metric, timeout)
                    if call >= warm:
                        timing.times_ms.append((time.perf_counter() - began) * 1e3)
            except Exception as error:  # noqa: BLE001 - lapcli's stop or a runner's failure: a result, not a crash
                ours = isinstance(error, (InfeasibleError, LapInputError, SolverError, SolverUnavailable, MemoryError))
                timing.status = "timeout" if ours and "time limit" in str(error) else "error"
                timing.message = str(error) if ours else f"{type(error).__name__}: {error}"
                if timing.status == "timeout" and began is not None:  # the stopped call's time (scipy's solve ran on)
                    timing.times_ms = [(time.perf_counter() - began) * 1e3]
                    timing.message = f"stopped after {ms_text(timing.times_ms[0])}: {error}"
                continue
            timing.engine, timing.objective = solution.report.solver, float(solution.objective)
            if max(timing.times_ms) > timeout * 1e3:  # an engine that cannot stop inside a solve (scipy)
                timing.status, timing.message = "timeout", f"took {ms_text(max(timing.times_ms))}"
            elif not solution.report.certified:
                timing.status, timing.message = "error", "not certified"
            elif reference is None:
                reference = timing.objective
            elif abs(timing.objective - reference) > 1e-9 * max(abs(reference), 1.0):
                timing.status, timing.message = "mismatch", f"objective {timing.objective!r} != {reference!r}"
    return results
