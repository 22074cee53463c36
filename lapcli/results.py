"""What a solve gives back: for a matrix the Solution (scipy's pair, lapjv's x/y, the objective, the
duals), for a stack the BatchSolution; each with one SolveReport. Their field names are a public
interface (the JSON reports)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .steps import StepStat


@dataclass
class SolveReport:
    """What one solve did, of a matrix or of a stack (``batch``: its number of problems; None for a
    matrix). Field names are a public interface (the JSON reports; scripts rely on them): a
    matrix's report has ``objective``, a stack's ``batch``, ``problems_per_second`` and
    ``objectives`` instead."""

    n_rows: int  # -1 for a list of matrices of several shapes
    n_cols: int
    maximize: bool
    solver: str
    device: str
    dtype: str
    total_ms: float
    version: str
    objective: int | float | None = None
    steps: list[StepStat] = field(default_factory=list)  # a stack's: summed over it, where the engine has steps
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)  # h2d_ms, kernel_ms, d2h_ms, grid, layout, …
    certified: bool = False  # complementary slackness checked on the duals (docs/reliability.md)
    certificate: dict[str, Any] = field(default_factory=dict)  # what was checked, margins, ms; or why not
    notes: list[str] = field(default_factory=list)  # e.g. "solved in float64: ..." (widened arithmetic)
    batch: int | None = None
    problems_per_second: float | None = None
    objectives: Any = None  # (B,) array, as a list in to_dict()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for name in (("batch", "problems_per_second", "objectives") if self.batch is None else ("objective",)):
            del data[name]
        if isinstance(self.objectives, np.ndarray):
            data["objectives"] = self.objectives.tolist()  # Python ints stay exact
        return data


@dataclass
class Solution:
    """The assignment (scipy's ``row_ind, col_ind``, sorted by row), its objective, duals and report.

    ``x`` and ``y`` are lapjv's views of the same assignment: the column of each row and the row of
    each column, −1 where none. ``duals`` is (u, v) in the caller's rows and columns: for a
    minimisation cost[i, j] − u[i] − v[j] ≥ 0 everywhere and = 0 on assigned pairs (≤ 0 and = 0
    when maximising), exactly for integer costs; for float costs up to the ``tolerance`` of the
    report's ``certificate``, checked on the work problem (rows reduced, forbidden pairs at a
    sentinel), plus the rounding of mapping them back to the caller's costs, up to 2^-52 (|u[i]| +
    |v[j]| + the largest finite |cost| of row i and column j) a pair (tests/test_certificate.py
    checks it in exact arithmetic). Engines without duals of their own (scipy, lapx) have them
    recovered from the assignment (lapcli.duals); None where that was not done (``certify=False``,
    or a recovery past its budget, in passes over the matrix: the report says why).
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
class MembersAnswer:
    """A ragged batch's answer before it goes back to the caller (lapcli.pipeline.solve_members_raw):
    ``col_ind`` (B, most rows) NumPy or CuPy, −1 where none; ``pairs`` the (2, Σ) rows and columns
    of lapcli.match, when asked (CuPy where the GPU solved them, host members included); ``flat``
    every member's columns after the previous member's, where the engine made them (a list's
    answer, split once); ``columns`` a host list's columns, one array per member, where the engine
    made them (``col_ind`` is then None unless certifying or pairing needed it)."""

    col_ind: Any
    objectives: Any
    report: SolveReport
    pairs: Any = None
    flat: Any = None
    columns: list | None = None


@dataclass
class BatchSolution:
    """``col_ind`` (B, n) in the caller's library and device (−1: an unassigned row), or a list of B
    arrays for a list of matrices of different shapes; ``objectives`` (B,) exact for integer costs,
    None when ``solve_batch(..., objectives=False)``; and one ``report``."""

    col_ind: Any
    objectives: np.ndarray | None
    report: SolveReport
