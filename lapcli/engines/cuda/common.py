"""What the engines on kernels/hungarian.cu share once a launch is over: check the status and the
permutation, certify on the device, map back, report the steps. Not an engine."""

from __future__ import annotations

from ...cuda.hungarian import check_result, device_name, step_stats
from ..base import EngineResult, certified_result


def finish(problem, work, state, status_word: int, counts, step_ms, engine: str, details: dict) -> EngineResult:
    """Raise on a bad status or a non-permutation; certify on the device; map back; the steps."""
    column_of_star = state["column_of_star_at_row"]
    check_result(status_word, column_of_star.get())
    return certified_result(problem, work, column_of_star, state["u"], state["v"], engine=engine,
                            device=device_name(), steps=step_stats(counts, step_ms), details=details)
