"""The step schema every engine reports in: numbered steps with a name, a count and milliseconds.

The Hungarian engines number the six steps of the classical algorithm (Munkres) as LAP19 does; an
engine that runs other phases names its own (see ``StepStat.name``); scipy reports none.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

# Step 1's auction (the classical kernel, its NumPy twin and cuda-sap's start): at most this many
# rounds of Jonker-Volgenant's augmenting row reduction, and fewer once this many rounds in a row
# left no fewer rows free.
AUCTION_ROUNDS = 1024
AUCTION_PATIENCE = 32

STEP_NAMES = {
    1: "start: auction or reductions",  # step 1: the auction start, or the classical reductions
    2: "star independent zeros",
    3: "cover starred columns",
    4: "prime uncovered zeros",
    5: "augment alternating paths",
    6: "shift duals by min slack",
}
# Engine cuda-sap's two steps: its start (rounds, or the scaled auction's phases), then the searches.
SAP_STEP_NAMES = {
    1: "start: auction",  # rounds run, or the ε-scaling auction's phases
    2: "shortest augmenting paths",  # searches (the rows the start left free)
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


def summed(*solves: list[StepStat]) -> list[StepStat]:
    """The steps of several solves of one problem (lapcli.cost_cap's capped rounds) as one table:
    each step's count and time added, in the order the steps first appear."""
    table: dict[tuple[int, str], StepStat] = {}
    for steps in solves:
        for stat in steps:
            key = (stat.step, stat.name)
            held = table.get(key)
            table[key] = stat if held is None else StepStat(stat.step, stat.name, held.count + stat.count,
                                                           held.ms + stat.ms)
    return list(table.values())
