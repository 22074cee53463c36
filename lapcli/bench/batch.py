"""``lap bench --suite batch``: the eight cells, every runner on the same stack.

Cells: B×n = 10000×16, 2000×64, 500×256, 64×1024 (square), each for a float32 stack of integers
uniform in [0, 10n) (``int``) and of U[0,1) values (``float``), made by ``generate_stack`` from a
seed per cell. Runners (skipped with a note where they cannot run here):

- ``cuda-batch``      lapcli ``solve_batch`` on the GPU, host array in, host array out
- ``cuda-batch:d2d``  the same with the stack already on the GPU (CuPy) and the result left there
- ``torch-la``        torch-linear-assignment: CPU float32 tensor → ``.cuda()`` → solve → ``.cpu()``
- ``torch-la:d2d``    torch-linear-assignment on a CUDA tensor, result left on the GPU
- ``lapx-batch``      ``lapx.lapjvx_batch`` (lapx ≥ 0.8, a thread pool over lapjvx)
- ``scipy-batch``     lapcli ``solve_batch`` with the CPU engine (scipy over a thread pool)
- ``scipy-loop``      ``scipy.optimize.linear_sum_assignment`` per problem, one thread

Timing: per cell and runner, ``warmup`` untimed solves, then at least ``repeat`` timed ones and,
for fast cells, more until the timed solves add up to ``min_seconds`` (at most MAX_REPEAT): nine
samples of a 0.4 ms call moved its median by ±30 % from one run to the next on the H100, where
hundreds agree within a few per cent. The median is reported. Only the solve is timed: putting the stack on the GPU for a device→device runner, and
bringing its result back for the check, are not. GPU runners synchronise before the clock stops.
Every runner's assignment is checked (a permutation of min(n, m) columns per problem) and its
objectives compared problem by problem with those most runners of the cell agree with (a wrong
first runner does not mark every right one, as the matrix suites' ``agreed``): a disagreement is a
failure, named on the runner that differs.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ..generate import generate_stack
from ..problem import objective_tolerance
from .batch_runners import BatchRunner, NotThisCell, batch_runners
from .table import ms_text

BATCH_CELLS: tuple[tuple[int, int], ...] = ((10000, 16), (2000, 64), (500, 256), (64, 1024))  # (B, n)
BATCH_KINDS = ("int", "float")  # float32 integers uniform in [0, 10n); float32 U[0, 1)
INT_RANGE = 10  # R of the int kind: integers in [0, R·n)


MAX_REPEAT = 1000  # timed solves per runner and cell at most, whatever min_seconds asks
SUITE_MIN_SECONDS = 0.2  # what ``lap bench --suite batch`` asks of each runner and cell

@dataclass
class BatchSettings:
    cells: tuple[tuple[int, ...], ...] = BATCH_CELLS  # (B, n); the matcher suite's (B, Q, K)
    kinds: tuple[str, ...] = BATCH_KINDS
    runners: tuple[str, ...] = ()
    repeat: int = 3
    warmup: int = 1
    seed: int = 0
    scale: float = 1.0  # batch sizes multiplied by this (at least one problem); n is kept
    min_seconds: float = 0.0  # keep timing a runner until its timed solves add up to this


@dataclass
class BatchTiming:
    batch: int
    n: int
    kind: str
    runner: str
    status: str  # ok | error | invalid | mismatch | skipped (a peer that does not take this cell's shape)
    times_ms: list[float] = field(default_factory=list)
    objective_total: float | None = None  # the sum of the B objectives (all of them are compared)
    message: str = ""

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None


class BatchMismatch(Exception):
    """Runners disagreed (or one gave no assignment); ``results`` holds the whole sweep."""

    def __init__(self, message: str, results: list[BatchTiming]):
        super().__init__(message)
        self.results = results


def baseline_of(runner: str, present: tuple[str, ...]) -> str | None:
    """What a runner's speedup is measured against: torch-linear-assignment in the same setting
    (host→host or device→device) when it ran, else the scipy loop."""
    torch_name = "torch-la:d2d" if runner.endswith(":d2d") else "torch-la"
    for candidate in (torch_name, "scipy-loop"):
        if candidate in present:
            return candidate
    return None


# ----------------------------------------------------------------------------- the sweep
def cell_stack(settings: BatchSettings, batch: int, n: int, kind: str) -> np.ndarray:
    """The one float32 stack every runner of a cell solves (seeded by the cell)."""
    seed = settings.seed * 1_000_003 + n * 7919 + batch * 31 + BATCH_KINDS.index(kind)
    if kind == "int":
        return generate_stack(batch, n, range_factor=INT_RANGE, seed=seed, kind="uniform", dtype="float32")
    return generate_stack(batch, n, seed=seed, kind="float", dtype="float32")


def scaled_cells(settings: BatchSettings) -> list[tuple[int, ...]]:
    """The cells with B scaled (the batch suite's --scale; the matcher's (B, Q, K) have a scale of 1)."""
    return [(max(1, round(batch * settings.scale)), *rest) for batch, *rest in settings.cells]


def assignment_problem(col_ind: np.ndarray, shape: tuple[int, int, int]) -> str | None:
    """Why ``col_ind`` is not an assignment of every problem of a (B, n, m) stack, or None."""
    batch, n, m = shape
    col_ind = np.asarray(col_ind)
    if col_ind.shape != (batch, n):
        return f"col_ind has shape {col_ind.shape}, expected {(batch, n)}"
    if ((col_ind < -1) | (col_ind >= m)).any():
        return "a column index is out of range"
    assigned = col_ind >= 0
    if (assigned.sum(axis=1) != min(n, m)).any():
        return f"a problem has not {min(n, m)} assigned rows"
    marked = np.sort(np.where(assigned, col_ind, -1 - np.arange(n)), axis=1)  # unassigned rows: distinct
    if (np.diff(marked, axis=1) == 0).any():
        return "a column is assigned twice in one problem"
    return None


def stack_objectives(stack: np.ndarray, col_ind: np.ndarray) -> np.ndarray:
    """Each problem's objective in float64 (the same summation for every runner)."""
    assigned = col_ind >= 0
    chosen = np.take_along_axis(stack, np.where(assigned, col_ind, 0)[:, :, None], axis=2)[:, :, 0]
    return np.where(assigned, chosen.astype(np.float64), 0.0).sum(axis=1)


def mismatches(answers: list[tuple[BatchTiming, np.ndarray]], differ) -> list[tuple]:
    """(timing, objectives, what ``differ(reference, objectives)`` finds, (reference runner, its objectives)) for each
    answer of one cell that differs from the one most answers agree with; among equals a scipy runner's
    (the reference every engine is tested against), else the first. A wrong first runner (lapcli's own
    on a GPU machine) is then the one marked, not every right one."""
    votes = [sum(not differ(mine, theirs) for _, theirs in answers) for _, mine in answers]
    tied = [i for i, vote in enumerate(votes) if vote == max(votes, default=0)]
    if not tied:
        return []
    chosen = next((i for i in tied if answers[i][0].runner.startswith("scipy")), tied[0])
    reference = (answers[chosen][0].runner, answers[chosen][1])
    return [(timing, objectives, bad, reference) for timing, objectives in answers
            if (bad := differ(reference[1], objectives))]


def disagreeing(stack: np.ndarray, reference: np.ndarray, other: np.ndarray) -> list[int]:
    """The problems whose objectives differ by more than the float tolerance of that problem."""
    differ = np.flatnonzero(reference != other)
    return [int(b) for b in differ if abs(reference[b] - other[b]) > objective_tolerance(stack[b])]


def time_runner(runner: BatchRunner, stack: np.ndarray, settings: BatchSettings, timing: BatchTiming):
    """Warm up, time ``repeat`` solves; the last answer on the host (None on failure)."""
    try:
        prepared = runner.setup(stack)
        for _ in range(settings.warmup):
            runner.solve(prepared)
        answer = None
        while (len(timing.times_ms) < settings.repeat
               or (sum(timing.times_ms) < settings.min_seconds * 1e3 and len(timing.times_ms) < MAX_REPEAT)):
            start = time.perf_counter()
            answer = runner.solve(prepared)
            timing.times_ms.append((time.perf_counter() - start) * 1e3)
        return runner.to_host(answer)
    except NotThisCell as reason:
        timing.status, timing.message = "skipped", str(reason)
        return None
    except Exception as error:  # a peer's failure is a result to report, not a crash
        timing.status, timing.message = "error", f"{type(error).__name__}: {error}"
        return None


def run_batch_bench(settings: BatchSettings, runners: dict[str, BatchRunner] | None = None,
                    on_progress: Callable[[str], None] | None = None) -> list[BatchTiming]:
    """Sweep cells × kinds × runners. Raises BatchMismatch (after the sweep) when a runner gives no
    assignment or objectives that differ from those most runners of the cell agree with."""
    runners = runners or batch_runners()
    results: list[BatchTiming] = []
    failures: list[str] = []
    for kind in settings.kinds:
        for batch, n in scaled_cells(settings):
            stack = cell_stack(settings, batch, n, kind)
            answers: list[tuple[BatchTiming, np.ndarray]] = []
            for name in settings.runners:
                timing = BatchTiming(batch, n, kind, name, "ok")
                col_ind = time_runner(runners[name], stack, settings, timing)
                if col_ind is not None:
                    why = assignment_problem(col_ind, stack.shape)
                    if why:
                        timing.status, timing.message = "invalid", why
                        failures.append(f"B={batch} n={n} {kind}: {name}: {why}")
                    else:
                        objectives = stack_objectives(stack, col_ind)
                        timing.objective_total = float(objectives.sum())
                        answers.append((timing, objectives))
                results.append(timing)
                if on_progress:
                    on_progress(f"B={batch} n={n} {kind} {name}: {timing.status}")
            for timing, objectives, bad, (name, expected) in mismatches(answers, lambda a, b: disagreeing(stack, a, b)):
                b = bad[0]
                timing.status, timing.message = "mismatch", f"{len(bad)} problems differ from {name}"
                failures.append(f"B={batch} n={n} {kind}: problem {b}: {name} found {expected[b]}, {timing.runner} "
                                f"found {objectives[b]} ({len(bad)} problem{'s differ' if len(bad) > 1 else ' differs'})")
                if on_progress:
                    on_progress(f"B={batch} n={n} {kind} {timing.runner}: mismatch")
    if failures:
        raise BatchMismatch("; ".join(failures), results)
    return results


# ----------------------------------------------------------------------------- outputs
def batch_table_rows(results: list[BatchTiming], runners: tuple[str, ...]) -> list[list[str]]:
    """Rows (B, n, kind, then per runner 'median ms (speedup×)' over its baseline_of)."""
    cells: dict[tuple, dict[str, BatchTiming]] = {}
    for t in results:
        cells.setdefault((t.kind, t.n, t.batch), {})[t.runner] = t
    rows = []
    kind_order = {kind: i for i, kind in enumerate(BATCH_KINDS)}
    for (kind, n, batch), by_runner in sorted(cells.items(), key=lambda item: (kind_order.get(item[0][0], 9), item[0][1])):
        ok = tuple(name for name, t in by_runner.items() if t.status == "ok" and t.median_ms)
        row = [str(batch), str(n), kind]
        for name in runners:
            t = by_runner.get(name)
            if t is None or t.status != "ok" or t.median_ms is None:
                row.append(t.status if t else "-")
                continue
            text = ms_text(t.median_ms)
            base = baseline_of(name, ok)
            if base is not None and base != name:
                text += f" ({by_runner[base].median_ms / t.median_ms:.2f}×)"
            row.append(text)
        rows.append(row)
    return rows


def batch_environment() -> dict[str, Any]:
    from .outputs import environment

    env = environment()
    for module in ("torch", "torch_linear_assignment"):
        try:
            env[module] = getattr(__import__(module), "__version__", "installed")
        except Exception:
            pass
    return env


def write_batch_json(path: str, settings: BatchSettings, results: list[BatchTiming], env: dict,
                     skipped: dict[str, str], suite: str = "batch") -> None:
    """The JSON record of a batch or matcher (``suite``) run; its settings name the suite, as the
    matrix suites' do."""
    import json

    from ..io.write import write_bytes

    payload = {
        "environment": env,
        "settings": {"suite": suite} | asdict(settings) | {"cells": scaled_cells(settings)},
        "timing": "the solve only (host→host runners include the copies; d2d runners start and end on the GPU), "
                  f"{'warm' if settings.warmup else 'no warm-up'}, per repeat",
        "skipped": skipped,
        "results": [asdict(r) | {"median_ms": r.median_ms} for r in results],
    }
    write_bytes(path, (json.dumps(payload, indent=1) + "\n").encode())
