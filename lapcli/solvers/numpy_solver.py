"""The NumPy Hungarian as a backend: the CPU path and the executable specification of the kernel."""

from __future__ import annotations

import platform

import numpy as np

from ..report import StepRecorder
from .base import BackendResult
from .numpy_hungarian import solve_square


def run(problem, **_options) -> BackendResult:
    work = problem.work
    if problem.xp is not np:
        work = problem.xp.asnumpy(work)
    recorder = StepRecorder()
    column_of_star_at_row = solve_square(work, problem.eps, recorder)
    rows, cols = problem.assignment_from_work(column_of_star_at_row)
    return BackendResult(rows=rows, cols=cols, device=f"cpu ({platform.machine()})",
                         dtype=str(work.dtype), steps=recorder.stats())
