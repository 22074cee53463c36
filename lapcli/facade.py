"""The facade: cost matrix → Problem → engine → certified Solution with its report.

``solve(cost, solver=...)`` is the one path every caller takes (the API, the CLI, bench). Engines
come from the registry (engines/registry.py); ``auto`` is decided by engines/auto.py.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from . import __version__
from .certificate import not_certified
from .cuda import probe
from .engines import registry
from .engines.auto import choose
from .errors import LapInputError
from .problem import prepare
from .results import Solution, SolveReport


def choose_engine(name: str, problem) -> tuple[str, str]:
    """Resolve ``auto`` and say why; refuse an engine that cannot run here."""
    if name == "auto":
        return choose(problem)
    engine = registry.get(name)
    if engine.capabilities.batch:
        raise LapInputError(f"solver {name!r} solves stacks of problems: use solve_batch or a 3-D input")
    available, why = engine.available()
    if not available:
        from .errors import SolverUnavailable

        raise SolverUnavailable(f"solver {name!r} cannot run here: {why}")
    return name, "requested"


def check_device(device: int | None) -> None:
    if device is None:
        return
    available, why = probe.cuda_status()
    if not available:
        raise LapInputError(f"--device {device}: {why}")
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    if not 0 <= device < count:
        raise LapInputError(f"--device {device}: there {'is' if count == 1 else 'are'} {count} CUDA "
                            f"device{'s' if count != 1 else ''} (0 … {count - 1})")


def solve(
    cost: Any,
    *,
    solver: str = "auto",
    maximize: bool = False,
    dtype: str | None = None,
    timeout: float | None = None,
    device: int | None = None,
    cost_limit: float | None = None,
) -> Solution:
    """Solve the linear assignment problem for ``cost`` and report how.

    Parameters
    ----------
    cost : array_like or cupy.ndarray, shape (n, m)
        Costs; ``+inf`` marks a forbidden pair (``-inf`` when ``maximize``).
    solver : str
        ``"auto"`` or an engine of ``lap info`` (``cuda``, ``cuda-stepwise``, ``numpy``, ``scipy``,
        ``lapx``); ``cuda-stepwise`` is the benchmark baseline.
    maximize : bool
        Maximise the total instead of minimising it.
    dtype : {"int32", "int64", "float32", "float64"}, optional
        Working dtype of the Hungarian engines (default: int32 for integers that fit, float32 for
        float32 input, float64 otherwise).
    timeout : float, optional
        Seconds after which the CUDA kernel gives up (SolverError).
    device : int, optional
        CUDA device to run on (default: CuPy's current device).
    cost_limit : float, optional
        As lapjv's ``cost_limit``: a row whose assignment would cost more than this stays
        unassigned (−1 in ``x``). Solved exactly as lapjv does, on the (n+m)² augmented problem.

    Returns
    -------
    Solution
        ``row_ind``, ``col_ind`` (as scipy), ``x``/``y`` (as lapjv), ``objective`` (exact for
        integers), ``duals`` and ``report`` (with ``certified``).

    Raises
    ------
    ValueError
        Bad input (scipy's messages), or "cost matrix is infeasible" (InfeasibleError).
    SolverUnavailable, SolverError
        The engine cannot run here, or stopped (guard, timeout, device memory, failed certificate).
    """
    start = time.perf_counter()
    check_device(device)
    if cost_limit is not None:
        from .cost_limit import solve_with_cost_limit

        return solve_with_cost_limit(cost, cost_limit, solver=solver, maximize=maximize, dtype=dtype,
                                     timeout=timeout, device=device)
    problem = prepare(cost, maximize=maximize, dtype=dtype, check=False)
    name, reason = choose_engine(solver, problem)
    engine = registry.get(name)
    if not engine.capabilities.checks_entries:
        problem.has_forbidden  # noqa: B018 - scipy's entry checks on the host; a GPU engine checks its copy
    if problem.is_empty:
        empty = np.empty(0, dtype=np.int64)
        return _solution(problem, name, reason, start, empty, empty, "none", str(problem.original.dtype))
    result = engine.load().run(problem, timeout=timeout, device=device)
    return _solution(problem, name, reason, start, result.rows, result.cols, result.device, result.dtype,
                     result=result)


def _solution(problem, name, reason, start, rows, cols, device, dtype_name, result=None) -> Solution:
    objective = problem.objective(rows, cols) if len(rows) else 0
    certified = result is not None and result.certificate is not None
    if result is None:
        certificate = not_certified("empty problem: nothing to prove")
    elif certified:
        certificate = result.certificate
    else:
        certificate = not_certified(f"engine {name} gives no duals")
    notes = problem.notes()
    report = SolveReport(
        objective=objective,
        n_rows=problem.n_rows,
        n_cols=problem.n_cols,
        maximize=problem.maximize,
        solver=name,
        device=device,
        dtype=dtype_name,
        total_ms=(time.perf_counter() - start) * 1e3,
        steps=result.steps if result else [],
        version=__version__,
        reason=reason,
        details=result.details if result else {},
        certified=certified,
        certificate=certificate,
        notes=notes,
    )
    return Solution(row_ind=rows, col_ind=cols, objective=objective, report=report,
                    duals=result.duals if result else None)
