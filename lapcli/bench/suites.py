"""What a ``lap bench`` sweep runs and what it records: the preset suites (groups of (n, R) cells of
one kind and its dtypes), the sweep's settings, and the timing of one solver on one matrix."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from ..generate import RANGELESS_KINDS, kind_dtype


def grid_cells(sizes, ranges) -> tuple[tuple[int, float], ...]:
    return tuple((n, r) for r in ranges for n in sizes)


@dataclass(frozen=True)
class SuiteGroup:
    """Cells (n, R) of one kind, each solved in every dtype of ``dtypes``.

    ``kind`` None: the kind the command asks for (``--kind``, default uniform); ``dtypes`` None: the
    dtypes it asks for (``--dtypes``, default the kind's own). A suite whose groups fix their kind
    (or dtypes) refuses ``--kind`` (or ``--dtypes``). The float kinds ignore R (it only seeds the
    matrix): their groups use the single R = 1, and an open group given one of them runs each size
    once, unless the command named its ranges (:meth:`resolve`)."""

    kind: str | None = None
    dtypes: tuple[str, ...] | None = None
    cells: tuple[tuple[int, float], ...] = ()

    def resolve(self, kind: str, dtypes: tuple[str, ...] | None, ranges_named: bool = False) -> "SuiteGroup":
        """This group with its open kind and dtypes filled from the command's; for a kind without R,
        its cells once a size (R would only reseed the same kind of matrix), unless the command
        named the ranges (``ranges_named``: kept as named)."""
        group_kind = self.kind or kind
        group_dtypes = self.dtypes or dtypes or (kind_dtype(group_kind),)
        cells = tuple(self.cells)
        if not ranges_named and group_kind in RANGELESS_KINDS:
            cells = tuple(dict.fromkeys((n, 1) for n, _ in cells))
        return SuiteGroup(group_kind, tuple(group_dtypes), cells)


def open_suite(cells) -> tuple[SuiteGroup, ...]:
    """A suite of one group that takes ``--kind`` and ``--dtypes`` (uniform int32 unless told)."""
    return (SuiteGroup(None, None, tuple(cells)),)


RANGES_SIZES = (1024, 2048, 4096, 8192)
STRUCTURED_SIZES = (2048, 4096, 8192, 16384, 32768)

# A suite is a tuple of groups, each a kind, its dtypes and its (n, R) cells.
SUITES: dict[str, tuple[SuiteGroup, ...]] = {
    # Kawtikwar–Cravens–Yang Tables IV–X
    "papers": open_suite(grid_cells((256, 512, 1024, 2048, 4096, 8192), (0.001, 0.01, 0.1, 1, 10, 100, 1000))),
    "quick": open_suite(grid_cells((16, 64, 128), (0.1, 10, 1000))),
    # five points at which to compare with HyLAC's classical solver on an H100
    "hylac": open_suite(((1024, 1), (4096, 1), (4096, 100), (8192, 10), (8192, 1000))),
    "gpu-check": open_suite(grid_cells((256, 1024, 4096), (1, 100))),
    # integers uniform in [0, R·n), U[0, 1) in float32 and float64, squared 2-D distances
    "ranges": (
        SuiteGroup("uniform", ("int32",), grid_cells(RANGES_SIZES, (0.1, 1, 10, 100, 1000))),
        SuiteGroup("float", ("float32", "float64"), grid_cells(RANGES_SIZES, (1,))),
        SuiteGroup("geometric", ("float64",), grid_cells(RANGES_SIZES, (1,))),
    ),
    # costs with structure, where the classical kernel pays one dual update per new zero: squared
    # 2-D distances as integers in [0, 10⁶] and as float64, beside U[0, 1) floats and integers at
    # R = 1000 (n = 32,768 float64 is 8.6 GB; scipy takes ~14 s at 8192: give it --sizes)
    "structured": (
        SuiteGroup("geometric-int", ("int32",), grid_cells(STRUCTURED_SIZES, (1,))),
        SuiteGroup("geometric", ("float64",), grid_cells(STRUCTURED_SIZES, (1,))),
        SuiteGroup("float", ("float32", "float64"), grid_cells(STRUCTURED_SIZES, (1,))),
        SuiteGroup("uniform", ("int32",), grid_cells(STRUCTURED_SIZES, (1000,))),
    ),
}


def fixed_options(groups: tuple[SuiteGroup, ...]) -> tuple[str, ...]:
    """The options a suite sets itself ("kind", "dtypes"): giving them with the suite is an error."""
    return tuple(name for name in ("kind", "dtypes") if any(getattr(g, name) is not None for g in groups))


def baseline_names(baseline: str | tuple[str, ...] | None) -> tuple[str, ...]:
    """The solvers a speedup is relative to: one name, or several (the fastest of them per cell)."""
    if baseline is None:
        return ()
    return (baseline,) if isinstance(baseline, str) else tuple(baseline)


@dataclass
class BenchSettings:
    """One kind: ``cells``, ``kind`` and ``dtypes``. Several kinds (a suite such as ``ranges``):
    ``groups`` (each with its kind and dtypes set), ``cells`` empty, ``kind`` and ``dtypes`` None.
    ``groups`` is filled either way; the sweep reads only it."""

    cells: tuple[tuple[int, float], ...]  # (n, R) pairs
    solvers: tuple[str, ...]
    dtypes: tuple[str, ...] | None = None  # None: the kind's own (int32 uniform, float64 the float kinds)
    kind: str | None = "uniform"
    repeat: int = 3
    warmup: int = 1
    seed: int = 0
    timeout: float | None = None
    baseline: str | tuple[str, ...] | None = None  # several: the fastest of them in each cell
    groups: tuple[SuiteGroup, ...] = ()
    suite: str | None = None  # the preset the cells came from, if any (a label for the records)

    def __post_init__(self):
        if self.groups:
            if self.cells:
                raise ValueError("give cells (one kind) or groups, not both")
            self.groups = tuple(self.groups)
            if any(g.kind is None or g.dtypes is None for g in self.groups):
                raise ValueError("every group of the settings needs its kind and dtypes (SuiteGroup.resolve)")
            if len(self.groups) == 1:  # one group is one kind: the single-kind fields say it
                (group,) = self.groups
                self.cells, self.kind, self.dtypes = group.cells, group.kind, group.dtypes
            else:
                self.kind = self.dtypes = None
            return
        if self.kind is None:
            raise ValueError("one kind (kind=...) or groups")
        if self.dtypes is None:
            self.dtypes = (kind_dtype(self.kind),)
        self.groups = (SuiteGroup(self.kind, tuple(self.dtypes), tuple(self.cells)),)

    @property
    def cell_count(self) -> int:
        """Matrices in the sweep (cells × dtypes over the groups); each is solved by every solver."""
        return sum(len(g.cells) * len(g.dtypes) for g in self.groups)


def ms_text(ms: float) -> str:
    """A time in a message: whole milliseconds from 10 on, three digits below (a limit of 1 µs
    passed by 0.016 ms read "took 0 ms")."""
    return f"{ms:,.0f} ms" if ms >= 10 else f"{ms:.3g} ms"


@dataclass
class SolveTiming:
    n: int
    range_factor: float
    dtype: str
    solver: str
    status: str  # ok | timeout | error | skipped | mismatch
    kind: str = "uniform"  # how the matrix was drawn (lapcli.generate.KINDS)
    engine: str = ""  # the engine that ran: auto's choice (its report's solver), else the solver itself
    times_ms: list[float] = field(default_factory=list)
    objective: Any = None
    steps: list[dict] = field(default_factory=list)
    message: str = ""

    def __post_init__(self):  # R a float however a suite or --ranges wrote it: one value in the JSON and CSV files
        self.range_factor = float(self.range_factor)

    @property
    def timed(self) -> bool:
        """Whether it has a whole solve's time: it finished, within the limit or past it (a
        solver that cannot be stopped, such as a peer's library, runs to its end and is marked
        timeout); a solve stopped at the limit keeps no time."""
        return self.status in ("ok", "timeout") and bool(self.times_ms)

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None


class ObjectiveMismatch(Exception):
    """Solvers disagreed on the optimum of one matrix; ``results`` holds the whole sweep."""

    def __init__(self, message: str, results: list[SolveTiming]):
        super().__init__(message)
        self.results = results
