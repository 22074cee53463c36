"""Engine ``lapx``: lapx's ``lapjv`` (Jonker–Volgenant, one CPU core), when installed
(``pip install 'lapcli[lapx]'``). It solves the work matrix (lapcli.work: tall problems
transposed, negated to maximise, float64 rows reduced, forbidden entries at a sentinel), wide ones
through lapjv's ``extend_cost``. lapjv computes in float64: integer work too wide for that to be
exact is reduced exactly first, or refused (lapcli.float64_exact.float64_solvable, as for scipy). No steps,
no duals: the pipeline recovers them and certifies the answer.

The lapx distribution installs the import package ``lap`` (a drop-in for gatagat/lap), not
``lapx``; ``lapx_module`` finds it and checks that it is lapx's.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..base import EngineResult, float64_costs


@lru_cache(maxsize=1)
def lapx_module():
    """lapx's import package ``lap``; ImportError, saying which, where lapx is not the distribution
    behind it or its import fails (a wheel built for another NumPy: the registry's probe then calls
    lapx unavailable, and ``auto`` solves without it)."""
    from importlib import metadata

    try:
        version = metadata.version("lapx")
    except metadata.PackageNotFoundError:
        raise ImportError("lapx is not installed (pip install 'lapcli[lapx]')") from None
    try:
        import lap
    except Exception as error:  # noqa: BLE001 - whatever a broken extension raises, it cannot run
        from ...io.text import first_line

        raise ImportError(f"lapx {version} is installed but does not import ({first_line(error)})") from None
    return lap


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    lapx = lapx_module()
    work = problem.work_stack(np)
    values, _ = float64_costs(work.values[0], False, "lapx")
    values = np.ascontiguousarray(values, dtype=np.float64)
    with np.errstate(over="ignore"):  # lapjv sums its own objective (unused): near float64's largest it overflows
        _, work_cols, _ = lapx.lapjv(values, extend_cost=values.shape[0] != values.shape[1])
    rows, cols = problem.assignment_from_work(work_cols)  # every work row is assigned (rows ≤ columns)
    # lapjv computes in float64; a dtype asked for is the work's (float32: the costs rounded to it first)
    return EngineResult(rows=rows, cols=cols, device="cpu", dtype=work.dtype if problem.requested_dtype else "float64")
