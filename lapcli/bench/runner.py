"""Side-by-side benchmark: every solver solves the same matrices, warm, repeated, medians reported.

Time measured per solve: from the host array to the host assignment (``lapcli.solve`` returns only
after the device→host copy), so host→device copy, the solve and the copy back are included;
CUDA context creation and the first NVRTC compile are excluded by a warm-up before the sweep.
Objectives must agree across solvers in every cell: a mismatch is a failure, never a footnote.

This module runs the sweep (the runners, and timing them); :mod:`lapcli.bench.suites` defines what
it runs, :mod:`lapcli.bench.table` and :mod:`lapcli.bench.outputs` present what it found.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any, NamedTuple

import numpy as np

from ..engines import registry
from ..errors import LapInputError, SolverUnavailable
from ..generate import check_options, generate, past_memory, physical_memory, uniform_high
from ..problem import objective_tolerance
from .suites import BenchSettings, ObjectiveMismatch, SolveTiming, ms_text


# ----------------------------------------------------------------------------- solver runners
def bench_solvers() -> tuple[str, ...]:
    """Every engine of the registry, ``auto`` (what users get), and the built peers."""
    matrices = tuple(name for name in registry.solver_choices(batch=False)
                     if name == "auto" or registry.get(name).capabilities.matrix)
    return matrices + BUILT_PEERS  # single problems; the batch suite has its own


class RunOutcome(NamedTuple):
    """What a runner returns for one solve. A runner may also return the pair (objective, steps):
    the engine is then taken to be the solver it runs under."""

    objective: Any
    steps: list[dict]
    engine: str


def first_calls() -> tuple[np.ndarray, np.ndarray]:
    """What each CPU runner (and ``auto``) solves before its first clock, so that nothing its first
    call loads is timed: 64 × 64 integers and floats (lapx loads its compiled solver at its first
    call, 0.5 ms at n = 64; the numpy engine NumPy's masked arrays at its first step 6, which a
    2 × 2 never reaches; auto, on a GPU machine, the CUDA driver's bindings to ask for devices)."""
    rng = np.random.default_rng(0)
    return rng.integers(0, 64, (64, 64), dtype=np.int32), rng.random((64, 64))


def lapcli_runner(solver: str) -> Callable:
    def run(cost, timeout) -> RunOutcome:
        from ..pipeline import solve

        stops = solver == "auto" or registry.get(solver).capabilities.timeout  # scipy's limit: timed, not asked
        solution = solve(cost, solver=solver, timeout=timeout if stops else None)
        steps = [asdict(s) for s in solution.report.steps]
        return RunOutcome(solution.objective, steps, solution.report.solver if solver == "auto" else solver)

    def prepare() -> None:  # the pipeline and the engines it may run, loaded before any clock starts
        from ..pipeline import solve

        for name in ("scipy", "lapx") if solver == "auto" else (solver,):  # auto's CPU engines; its GPU ones warm up
            with contextlib.suppress(SolverUnavailable):  # (load asks whether it runs here)
                registry.get(name).load()
                if registry.get(name).capabilities.device == "cpu":
                    for cost in first_calls():
                        solve(cost, solver=name)
        if solver == "auto":  # and its choice: on a GPU machine its first call asks the driver for the devices
            for cost in first_calls():
                solve(cost, solver="auto")

    run.prepare = prepare
    return run


def solver_available(name: str) -> tuple[bool, str]:
    if name == "auto":
        return True, ""
    if name in BUILT_PEERS:
        from . import guthe

        return guthe.available()
    return registry.get(name).available()


def too_wide(solver: str, n: int) -> int | None:
    """The engine's column limit when n exceeds it (cuda-batch: 2048), else None."""
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
        return RunOutcome(peer_objective(cost, rows, cols), [], name)

    def prepare() -> None:  # the peer's import (scipy.optimize: ~0.3 s) and its first calls before any clock starts
        for cost in first_calls():
            run(cost, None)

    run.prepare = prepare
    return run


def peer_objective(cost, rows, cols) -> int | float:
    """A peer's objective as lapcli's: an int64 sum for integers, float64 for floats (float32 too)."""
    exact = cost.dtype.kind in "biu"
    chosen = cost[rows, cols].astype(np.int64 if exact else np.float64)
    return int(chosen.sum()) if exact else float(chosen.sum())


def built_peer_runner(name: str) -> Callable:
    """A peer the user builds (lapcli.bench.guthe): its column of each row, the objective summed
    as the other peers'. Loaded before the sweep's clocks start. It gets no warm-up solve: it compiles
    nothing at run time, and at n = 32,768 a solve takes it 21–25 s on 16 cores (H100 machine),
    a warm-up as long again within the device's ten minutes a call."""
    def run(cost, timeout) -> RunOutcome:
        from . import guthe

        column_of_row = guthe.solve(cost)
        rows = np.flatnonzero(column_of_row >= 0)
        return RunOutcome(peer_objective(cost, rows, column_of_row[rows]), [], name)

    def prepare() -> None:  # the library loaded (ctypes) before any clock starts, where it can be
        from . import guthe

        guthe.available()  # loads it where it can

    run.needs_warmup, run.prepare = False, prepare
    return run


PEERS = ("scipy", "lapx")  # timed as direct library calls (peer_runner)
BUILT_PEERS = ("guthe-omp",)  # a library the user builds and names in the environment (lapcli.bench.guthe)


def default_runners() -> dict[str, Callable]:
    return {name: built_peer_runner(name) if name in BUILT_PEERS else peer_runner(name) if name in PEERS
            else lapcli_runner(name) for name in bench_solvers()}


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
    return generate(n, range_factor=range_factor, seed=cell_seed, kind=kind, dtype=drawn_dtype(n, range_factor, dtype,
                                                                                                kind))


def drawn_dtype(n: int, range_factor: float, dtype: str, kind: str) -> str:
    """The dtype a cell's matrix is drawn in: ``dtype``, or int64 where uniform integers pass it."""
    if kind == "uniform" and np.dtype(dtype).kind == "i" and uniform_high(n, range_factor) > np.iinfo(dtype).max:
        return "int64"
    return dtype


def check_cells(groups) -> None:
    """Every matrix the suite's groups (resolved: a kind and dtypes each) will draw can be drawn
    here, as ``lap generate`` checks its one (a block too large for memory is bad input), and not
    every cell is too large to hold (:func:`cell_too_large`; one such is skipped), before any work:
    LapInputError naming the first that cannot. A cell too large to hold is told as such on every
    machine, not by its block, which a machine with more memory could draw."""
    too_large = []
    for group in groups:
        for n, range_factor in group.cells:
            for dtype in group.dtypes:
                drawn = drawn_dtype(n, range_factor, dtype, group.kind)
                too_large.append(cell_too_large(n, drawn))
                check_options(n, n, range_factor, group.kind, drawn, memory=not too_large[-1])
    if too_large and all(too_large):  # nothing would run: bad input (one cell too large is skipped)
        raise LapInputError(too_large[0])


def cell_too_large(n: int, dtype: str) -> str | None:
    """Why an n × n cell of ``dtype`` cannot be held here, or None: the sweep holds its matrix and a
    solver's float64 copy (scipy's and lapx's), and drew an n = 120,000 cell until memory ran out."""
    need = n * n * (np.dtype(dtype).itemsize + 8)
    past = past_memory(need, physical_memory())
    if past is None:
        return None
    return (f"the n={n} cell holds its {n}×{n} {dtype} matrix and a solver's float64 copy: "
            f"{need / 2**30:.3g} GiB, {past}")


def run_bench(settings: BenchSettings, runners: dict[str, Callable] | None = None,
              on_progress: Callable[[str], None] | None = None) -> list[SolveTiming]:
    """Sweep groups × dtypes × cells (n, R) × solvers. Raises ObjectiveMismatch after recording it."""
    runners = runners or default_runners()
    for solver in settings.solvers:  # imports are set-up, not solving: with --warmup 0 too
        try:
            getattr(runners[solver], "prepare", lambda: None)()
        except Exception:  # noqa: BLE001 - a runner that cannot load fails in its cells, recorded there
            pass
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
                too_large = cell_too_large(n, drawn_dtype(n, range_factor, dtype, kind))
                cost = None if too_large else bench_matrix(settings, n, range_factor, dtype, kind)
                cell: list[SolveTiming] = []
                for solver in settings.solvers:
                    timing = SolveTiming(n, range_factor, dtype, solver, "ok", kind=kind)
                    done = ""
                    if too_large:
                        timing.status, timing.message = "skipped", too_large
                    elif (solver, kind, dtype, range_factor) in gave_up:
                        timing.status, timing.message = "skipped", "timed out at a smaller n"
                    elif too_wide(solver, n):
                        timing.status, timing.message = "skipped", f"{solver} takes at most {too_wide(solver, n)} columns"
                    else:
                        began = time.perf_counter()
                        time_one(runners[solver], cost, settings, timing)
                        done = solve_summary(timing, time.perf_counter() - began)
                        if timing.status == "timeout":
                            gave_up.add((solver, kind, dtype, range_factor))
                    cell.append(timing)
                    if on_progress:
                        on_progress(f"n={n} R={range_factor}{label} {dtype} {solver}: {timing.status}{done}")
                solved = [t for t in cell if t.timed]  # past the limit too: it may be a baseline
                reference = agreed(solved, cost)
                for other in solved:
                    if other is not reference and not objectives_agree(reference.objective, other.objective, cost):
                        other.status = "mismatch"
                        other.message = f"objective {other.objective}, {reference.solver} found {reference.objective}"
                        mismatches.append(
                            f"n={n} R={range_factor}{label} {dtype}: {reference.solver} found {reference.objective}, "
                            f"{other.solver} found {other.objective}"
                        )
                results.extend(cell)
    if mismatches:
        raise ObjectiveMismatch("; ".join(mismatches), results)
    return results


def agreed(solved: list[SolveTiming], cost) -> SolveTiming | None:
    """The solve a mismatch is measured against: the one whose objective most others agree with, so
    that a wrong first solver does not mark every right one "mismatch"; among equals scipy's (the
    reference every engine is tested against), else the first."""
    votes = [sum(objectives_agree(t.objective, other.objective, cost) for other in solved) for t in solved]
    most = [t for t, vote in zip(solved, votes) if vote == max(votes, default=0)]
    return next((t for t in most if t.solver == "scipy"), most[0] if most else None)


def solve_summary(timing: SolveTiming, wall_s: float) -> str:
    """What a progress line says after the status: the median, the engine auto chose, and the
    wall time with warm-ups, so that a log cut off by a time limit still holds its numbers."""
    median = timing.median_ms
    engine = f" by {timing.engine}" if timing.engine and timing.engine != timing.solver else ""
    timed = "" if median is None else f", median {median:.{3 if median < 1 else 1}f} ms{engine}"
    return f"{timed}, {wall_s:.1f} s in all"


# A warm-up solve's time limit, as a multiple of the timed solves': it also pays what a process or
# a machine does once (CuPy compiling its own kernels on a machine where it never ran: 7.6 s of a
# first 15.7 s solve at 4096 on an H100, which under an 8 s limit read as a timeout).
WARMUP_LIMIT_TIMES = 4


def time_one(runner: Callable, cost: np.ndarray, settings: BenchSettings, timing: SolveTiming) -> None:
    from ..errors import SolverError

    engines: list[str] = []  # per repeat; auto could choose differently from one repeat to the next
    warmup_limit = None if settings.timeout is None else settings.timeout * WARMUP_LIMIT_TIMES
    try:
        for _ in range(settings.warmup if getattr(runner, "needs_warmup", True) else 0):
            runner(cost, warmup_limit)
        for _ in range(settings.repeat):
            start = time.perf_counter()
            objective, steps, *engine = runner(cost, settings.timeout)  # RunOutcome, or (objective, steps)
            elapsed = (time.perf_counter() - start) * 1e3
            timing.times_ms.append(elapsed)
            timing.objective, timing.steps = objective, steps
            engines.append(engine[0] if engine and engine[0] else timing.solver)
            timing.engine = "/".join(dict.fromkeys(engines))
            if settings.timeout is not None and elapsed > settings.timeout * 1e3:
                # a solver that cannot be stopped ran to its end: no more repeats, every one kept;
                # past the limit where their median is (one slow repeat is no measure of the cell)
                timing.message = f"a repeat took {ms_text(elapsed)}"
                if timing.median_ms > settings.timeout * 1e3:
                    timing.status = "timeout"
                return
    except Exception as error:  # lapcli's stop or a peer's failure: a result to report, not a crash
        ours = isinstance(error, SolverError)
        timing.status = "timeout" if ours and "time limit" in str(error) else "error"
        timing.message = str(error) if ours else f"{type(error).__name__}: {error}"
        timing.times_ms.clear()  # stopped: the earlier repeats' times are no measure of this cell
        timing.objective = None
