"""What every engine returns to the pipeline (lapcli.pipeline): the assignment in the caller's coordinates, where it
ran, its steps, and (for engines that keep duals) the duals and the optimality certificate."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..steps import StepStat


@dataclass
class EngineResult:
    rows: np.ndarray
    cols: np.ndarray
    device: str
    dtype: str
    steps: list[StepStat] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    duals: tuple[np.ndarray, np.ndarray] | None = None  # (u, v) in the caller's rows, columns and sign
    certificate: dict[str, Any] | None = None  # see lapcli.certificate.Certificate.to_dict


def certified_result(problem, work, col_of_row, u, v, *, engine: str, device: str,
                     steps: list[StepStat] | None = None, details: dict[str, Any] | None = None,
                     row_min_slack=None, host_copies=None) -> EngineResult:
    """Prove the work matrix's assignment optimal with its duals (lapcli.certificate: raises
    SolverError when the proof fails), then map assignment and duals to the caller's matrix.
    ``row_min_slack``: the certificate's read pass, already run on the device (see certify).
    ``host_copies``: (col_of_row, u, v) already copied to the host, when those are on the device."""
    from ..certificate import certify, column_reduction_rounding
    from ..cost_cap import CAP_ROUNDS, CapRetry, tightened

    certificate = certify(work.values, col_of_row, u, v, work.eps, engine, row_min_slack)
    host = lambda a: a.get() if hasattr(a, "get") else np.asarray(a)  # noqa: E731 - CuPy or NumPy
    col_of_row, u, v = host_copies if host_copies is not None else (host(col_of_row), host(u), host(v))
    rounding = column_reduction_rounding(work, col_of_row, u, v, certificate.max_assigned_slack)
    certificate.objective_within += rounding  # before the answer below is kept by a CapRetry
    rows, cols = problem.assignment_from_work(col_of_row)
    result = EngineResult(
        rows=rows, cols=cols, device=device, dtype=work.dtype, steps=steps or [], details=details or {},
        duals=problem.duals_from_work(u, v, work), certificate=certificate.to_dict(),
    )
    try:  # big finite costs no optimum takes inflate eps: judged at the capped one, or solved again
        judged_again = tightened(work, col_of_row, u, v, certificate, engine,
                                 square=len(work.values) == work.values.shape[1], retry=problem.cap_rounds < CAP_ROUNDS)
        if judged_again is not certificate:  # the same slacks at the capped tolerance
            judged_again.objective_within += rounding
            certificate = judged_again
    except CapRetry as retry:
        if work.values.dtype.itemsize == 8 or problem.requested_dtype is None:
            retry.first = result  # proved at the looser tolerance: for a caller that cannot solve again
            raise
        result.details["costs_capped_at"] = (  # float32 asked for, whose tolerance follows max |c|: said so
            f"not solved again: float32 work, asked for, is proved within {certificate.objective_within:.3g} of its "
            f"costs' optimum (a tolerance of {certificate.tolerance:.3g} a pair, which follows its largest cost); "
            f"float64 work would be solved again with costs capped at {retry.cap:.6g}")
    result.certificate = certificate.to_dict()
    return result


def float64_costs(values: np.ndarray, maximize: bool, engine: str) -> tuple[np.ndarray, bool]:
    """(costs, maximize) with ``values``' optimal assignments that ``engine``'s float64 arithmetic
    (scipy's, lapx's) solves exactly (lapcli.float64_exact.float64_solvable), or TooWideError: bad input for
    this engine, which ``auto`` never gives such costs (it was a SolverError, exit 1)."""
    from ..errors import TooWideError
    from ..float64_exact import float64_solvable

    solvable = float64_solvable(values, maximize)
    if solvable is None:
        raise TooWideError(f"integer costs too wide for {engine}'s float64 to be exact, even reduced; solver "
                           "numpy (or auto) solves integers exactly in int64 where their spread allows")
    return solvable


@dataclass
class BatchEngineResult:
    col_ind: Any  # (B, n) int64, the caller's column of each row, −1 unassigned (NumPy or CuPy); None: columns
    device: str
    dtype: str
    details: dict[str, Any] = field(default_factory=dict)
    certificate: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    objectives: np.ndarray | None = None  # (B,) host, exact for integers; None: the caller sums them
    # the engine solved a stack whose entries nobody had checked and met NaN or an infinity: the
    # pipeline checks them (bad input, or forbidden pairs) and runs the engine again
    unchecked_nonfinite: bool = False
    pairs: Any = None  # lapcli.match's pairs, (2, Σ): rows, then columns, where the engine made them
    flat: Any = None  # a ragged list's columns, member after member (Σ rows), where the engine made them
    columns: list | None = None  # a host list's columns, one array per member, where the engine made them


@dataclass
class PendingBatch:
    """A batch engine's launch still running: ``col_ind`` is the device array the answer's columns
    will be in (the pipeline makes the caller's view of it meanwhile), ``finish()`` waits and
    returns the BatchEngineResult. A small batch's whole call is ~0.15 ms on an H100, so the
    bookkeeping of the call is done while its kernel runs."""

    col_ind: Any
    finish: Any  # () -> BatchEngineResult
