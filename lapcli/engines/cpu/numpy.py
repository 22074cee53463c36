"""Engine ``numpy``: the NumPy Hungarian, the executable specification of the CUDA kernel."""

from __future__ import annotations

import platform

import numpy as np

from ...steps import AUCTION_ROUNDS, StepRecorder
from ..base import EngineResult, certified_result
from .numpy_hungarian import solve_square


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    """Step 1 by auction, as the ``cuda`` kernel."""
    return solve(problem)


def solve(problem, *, auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """``run`` with the auction's round cap (0: the classical step 1, as the kernel's)."""
    work = problem.work_on(np)
    recorder = StepRecorder()
    column_of_star_at_row, u, v = solve_square(work.values, work.eps, recorder, auction_rounds=auction_rounds)
    return certified_result(problem, work, column_of_star_at_row, u, v, engine="numpy",
                            device=f"cpu ({platform.machine()})", steps=recorder.stats())
