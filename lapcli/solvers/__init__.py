"""One interface over every solver: ``solve(cost, solver=...)`` returns a Solution with its report.

``auto`` picks the CUDA kernel when CuPy imports and a CUDA device answers; otherwise the NumPy
Hungarian for small matrices (where it is quick and gives the step table) and scipy beyond.
"""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .. import __version__
from ..errors import LapInputError, SolverUnavailable
from ..problem import Problem, prepare
from ..report import SolveReport

SOLVERS = ("auto", "cuda", "cuda-stepwise", "numpy", "scipy")

# Largest max(n, m) that ``auto`` gives the NumPy Hungarian when no GPU is present. Measured on
# the 2-core CI machine (docs/benchmarks.md): at n = 1024 its worst range (R = 1000·n) takes
# 0.65 s against scipy's 0.05 s; at n = 2500 it is 6.4 s against 0.57 s. Up to here the step
# table is worth the wait; beyond it scipy runs.
NUMPY_AUTO_LIMIT = 1024

_BACKEND_MODULES = {
    "numpy": "lapcli.solvers.numpy_solver",
    "scipy": "lapcli.solvers.scipy_solver",
    "cuda": "lapcli.solvers.cuda_solver",
    "cuda-stepwise": "lapcli.solvers.cuda_stepwise_solver",
}


@dataclass
class Solution:
    """The assignment (scipy's ``row_ind, col_ind``, sorted by row), its objective and report."""

    row_ind: np.ndarray
    col_ind: np.ndarray
    objective: int | float
    report: SolveReport

    def __iter__(self):  # lets ``rows, cols = solve(...)`` work like scipy's tuple
        return iter((self.row_ind, self.col_ind))


@lru_cache(maxsize=1)
def cuda_status() -> tuple[bool, str]:
    """(available, why): whether CuPy imports and sees a CUDA device."""
    try:
        import cupy
    except Exception as error:  # ImportError, or a broken CUDA install raising on import
        return False, f"CuPy is not importable ({type(error).__name__})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:
        return False, f"no CUDA device ({error})".replace("\n", " ")
    if count < 1:
        return False, "no CUDA device"
    return True, "CuPy sees a CUDA device"


def choose_solver(name: str, problem: Problem) -> tuple[str, str]:
    """Resolve ``auto`` and say why; refuse ``cuda`` where it cannot run."""
    if name not in SOLVERS:
        raise LapInputError(f"unknown solver {name!r}; choose one of {', '.join(SOLVERS)}")
    if name.startswith("cuda"):
        available, why = cuda_status()
        if not available:
            raise SolverUnavailable(f"solver {name!r} cannot run here: {why}")
        return name, "requested"
    if name != "auto":
        return name, "requested"
    available, why = cuda_status()
    if available:
        return "cuda", f"auto: {why}"
    if problem.size <= NUMPY_AUTO_LIMIT:
        return "numpy", f"auto: {why}; n ≤ {NUMPY_AUTO_LIMIT} runs on the NumPy Hungarian"
    return "scipy", f"auto: {why}; n > {NUMPY_AUTO_LIMIT} runs on scipy (faster than the NumPy Hungarian there)"


def backend(name: str):
    return importlib.import_module(_BACKEND_MODULES[name])


def solve(
    cost: Any,
    *,
    solver: str = "auto",
    maximize: bool = False,
    dtype: str | None = None,
    timeout: float | None = None,
) -> Solution:
    """Solve the linear assignment problem for ``cost`` and report how.

    Parameters
    ----------
    cost : array_like or cupy.ndarray, shape (n, m)
        Costs; ``+inf`` marks a forbidden pair (``-inf`` when ``maximize``).
    solver : {"auto", "cuda", "cuda-stepwise", "numpy", "scipy"}
        ``cuda-stepwise`` is the benchmark baseline: the same kernels, one launch per step.
    maximize : bool
        Maximise the total instead of minimising it.
    dtype : {"int32", "int64", "float32", "float64"}, optional
        Working dtype of the Hungarian solvers (default: int32 for integers that fit, float32
        for float32 input, float64 otherwise).
    timeout : float, optional
        Seconds after which the CUDA kernel gives up (SolverError).

    Returns
    -------
    Solution
        ``row_ind``, ``col_ind`` (as scipy), ``objective`` (exact for integers) and ``report``.

    Raises
    ------
    ValueError
        Bad input (scipy's messages), or "cost matrix is infeasible" (InfeasibleError).
    SolverUnavailable, SolverError
        The solver cannot run here, or stopped (guard, timeout, device memory).
    """
    start = time.perf_counter()
    problem = prepare(cost, maximize=maximize, dtype=dtype)
    name, reason = choose_solver(solver, problem)
    if problem.is_empty:
        empty = np.empty(0, dtype=np.int64)
        result_rows, result_cols, device, dtype_name, steps, details = empty, empty, "none", str(problem.original.dtype), [], {}
    else:
        result = backend(name).run(problem, timeout=timeout)
        result_rows, result_cols = result.rows, result.cols
        device, dtype_name, steps, details = result.device, result.dtype, result.steps, result.details
    objective = problem.objective(result_rows, result_cols) if len(result_rows) else 0
    report = SolveReport(
        objective=objective,
        n_rows=problem.n_rows,
        n_cols=problem.n_cols,
        maximize=problem.maximize,
        solver=name,
        device=device,
        dtype=dtype_name,
        total_ms=(time.perf_counter() - start) * 1e3,
        steps=steps,
        version=__version__,
        reason=reason,
        details=details,
    )
    return Solution(row_ind=result_rows, col_ind=result_cols, objective=objective, report=report)
