"""What a solve gives back: for a matrix the Solution (scipy's pair, lapjv's x/y, the objective, the
duals) and its SolveReport; for a stack the BatchSolution and its BatchReport. Their field names
are a public interface (the JSON reports)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .steps import StepStat


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
    certified: bool = False  # complementary slackness checked on the duals (docs/reliability.md)
    certificate: dict[str, Any] = field(default_factory=dict)  # what was checked, margins, ms; or why not
    notes: list[str] = field(default_factory=list)  # e.g. "solved in float64: ..." (widened arithmetic)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Solution:
    """The assignment (scipy's ``row_ind, col_ind``, sorted by row), its objective, duals and report.

    ``x`` and ``y`` are lapjv's views of the same assignment: the column of each row and the row of
    each column, −1 where none. ``duals`` is (u, v) in the caller's rows and columns: for a
    minimisation cost[i, j] − u[i] − v[j] ≥ 0 everywhere and = 0 on assigned pairs (≤ 0 and = 0
    when maximising), up to the tolerance in the report's ``certificate``; None for engines without
    duals (scipy).
    """

    row_ind: np.ndarray
    col_ind: np.ndarray
    objective: int | float
    report: SolveReport
    duals: tuple[np.ndarray, np.ndarray] | None = None

    def __iter__(self):  # lets ``rows, cols = solve(...)`` work like scipy's tuple
        return iter((self.row_ind, self.col_ind))

    @property
    def x(self) -> np.ndarray:
        """Column assigned to each row, −1 for an unassigned row (lapjv's ``x``)."""
        x = np.full(self.report.n_rows, -1, dtype=np.int64)
        x[np.asarray(self.row_ind)] = np.asarray(self.col_ind)
        return x

    @property
    def y(self) -> np.ndarray:
        """Row assigned to each column, −1 for an unassigned column (lapjv's ``y``)."""
        y = np.full(self.report.n_cols, -1, dtype=np.int64)
        y[np.asarray(self.col_ind)] = np.asarray(self.row_ind)
        return y


@dataclass
class BatchReport:
    """What one batch solve did (the JSON report of ``lap solve stack.npy``)."""

    batch: int
    n_rows: int
    n_cols: int
    maximize: bool
    solver: str
    device: str
    dtype: str
    total_ms: float
    problems_per_second: float
    version: str
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)  # h2d_ms, kernel_ms, d2h_ms, layout, …
    steps: list = field(default_factory=list)  # summed over the batch where the engine has steps
    certified: bool = False
    certificate: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    objectives: Any = field(default_factory=list)  # (B,) array, as a list in to_dict()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if isinstance(self.objectives, np.ndarray):
            data["objectives"] = self.objectives.tolist()  # Python ints stay exact
        return data


@dataclass
class BatchSolution:
    """``col_ind`` (B, n) in the caller's library and device (−1: an unassigned row), ``objectives``
    (B,) exact for integer costs, and one ``report``."""

    col_ind: Any
    objectives: np.ndarray
    report: BatchReport
