"""The per-step timing report: one schema for every solver, as JSON for scripts and Rich for people.

The six steps are those of the classical Hungarian algorithm (Munkres) as LAP19 numbers them.
A solver that does not run them (scipy) reports an empty step list.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

STEP_NAMES = {
    1: "reduce rows and columns",
    2: "star independent zeros",
    3: "cover starred columns",
    4: "prime uncovered zeros",
    5: "augment alternating paths",
    6: "shift duals by min slack",
}


@dataclass
class StepStat:
    step: int
    name: str
    count: int
    ms: float


class StepRecorder:
    """Accumulates time (ns) and executions of each step, the host-side twin of the kernel's timers."""

    def __init__(self) -> None:
        self.ns = [0] * 7
        self.counts = [0] * 7

    @contextmanager
    def step(self, number: int):
        start = time.perf_counter_ns()
        try:
            yield
        finally:
            self.add(number, time.perf_counter_ns() - start)

    def add(self, number: int, ns: int, count: int = 1) -> None:
        self.ns[number] += int(ns)
        self.counts[number] += int(count)

    def stats(self) -> list[StepStat]:
        return [StepStat(s, STEP_NAMES[s], self.counts[s], self.ns[s] / 1e6) for s in range(1, 7)]


@dataclass
class SolveReport:
    """What one solve did. Field names are a public interface: scripts rely on them."""

    objective: int | float
    n_rows: int
    n_cols: int
    maximize: bool
    solver: str
    device: str
    dtype: str
    total_ms: float
    steps: list[StepStat]
    version: str
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def render_summary(report: SolveReport, console) -> None:
    """Print the human summary (objective, solver, device, total time, step table) to ``console``."""
    from rich.table import Table

    console.print(
        f"[bold]objective[/] {report.objective}   [bold]solver[/] {report.solver}   "
        f"[bold]device[/] {report.device}   [bold]dtype[/] {report.dtype}   "
        f"[bold]size[/] {report.n_rows}×{report.n_cols}   [bold]total[/] {report.total_ms:.3f} ms"
    )
    if report.reason:
        console.print(f"[dim]{report.reason}[/]")
    if not report.steps:
        console.print("[dim]this solver does not run the six Hungarian steps: no step table[/]")
        return
    table = Table(title="Hungarian steps", title_justify="left")
    table.add_column("step", justify="right")
    table.add_column("name")
    table.add_column("count", justify="right")
    table.add_column("ms", justify="right")
    table.add_column("share", justify="right")
    total = sum(s.ms for s in report.steps) or 1.0
    for s in report.steps:
        table.add_row(str(s.step), s.name, str(s.count), f"{s.ms:.3f}", f"{100 * s.ms / total:.1f}%")
    console.print(table)
    timing_keys = ("compile_ms", "h2d_ms", "kernel_ms", "d2h_ms", "grid", "block")
    extras = [f"{key} {report.details[key]}" for key in timing_keys if key in report.details]
    if extras:
        console.print("[dim]" + "   ".join(extras) + "[/]")
