"""The results of a sweep as a table: one row per matrix (n, R, kind, dtype), per solver its
median time and its speedup over the baseline."""

from __future__ import annotations

from ..generate import RANGELESS_KINDS
from .suites import SolveTiming, baseline_names


def results_kinds(results: list[SolveTiming]) -> tuple[str, ...]:
    """The kinds of the results, in the order they were run."""
    return tuple(dict.fromkeys(t.kind for t in results))


def results_table_columns(results: list[SolveTiming], solvers: tuple[str, ...]) -> tuple[str, ...]:
    """The header of :func:`results_table_rows`: a ``kind`` column only when the kinds differ."""
    kind = ("kind",) if len(results_kinds(results)) > 1 else ()
    return ("n", "R", *kind, "dtype", *solvers)


def baseline_title(baseline: str | tuple[str, ...] | None) -> str:
    names = baseline_names(baseline)
    if len(names) > 1:
        return f"the faster of {', '.join(names)} in each cell" if len(names) == 2 else \
            f"the fastest of {', '.join(names)} in each cell"
    return names[0] if names else "nothing"


def fastest_baseline(by_solver: dict[str, SolveTiming], baseline: str | tuple[str, ...] | None) -> SolveTiming | None:
    """The baseline of one cell: the fastest of the baseline solvers that solved it (past the
    time limit too: its time is a whole solve's)."""
    solved = [by_solver[name] for name in baseline_names(baseline) if name in by_solver and by_solver[name].timed]
    return min(solved, key=lambda t: t.median_ms) if solved else None


def ms_text(ms: float) -> str:
    """A median as the tables print it: two decimals, or three significant digits below 1 ms, so
    that a small time is not shown as 0.01 or 0.00 beside a speedup computed from its value."""
    return f"{ms:.2f}" if ms >= 1 else f"{ms:.3g}"


def range_label(kind: str, range_factor: float, ranges_of_kind: set[float]) -> str:
    """R as the table shows it: '—' for a float kind (R does not shape its values; it only seeds
    the matrix), unless the results hold that kind at several R, which then tell the rows apart."""
    if kind in RANGELESS_KINDS and len(ranges_of_kind) == 1:
        return "—"
    return f"{range_factor:g}"


def results_table_rows(results: list[SolveTiming], solvers: tuple[str, ...], baseline: str | tuple[str, ...] | None):
    """Rows (n, R, kind when the kinds differ, dtype, then per solver 'median ms' and the speedup
    over the baseline; for ``auto`` also the engine it ran). Columns: :func:`results_table_columns`."""
    kinds = results_kinds(results)
    several_kinds = len(kinds) > 1
    base_names = baseline_names(baseline)
    ranges: dict[str, set[float]] = {}
    cells: dict[tuple, dict[str, SolveTiming]] = {}
    for t in results:
        ranges.setdefault(t.kind, set()).add(t.range_factor)
        cells.setdefault((kinds.index(t.kind), t.dtype, t.range_factor, t.n), {})[t.solver] = t
    rows = []
    for (kind_index, dtype, range_factor, n), by_solver in sorted(cells.items()):
        kind = kinds[kind_index]
        base = fastest_baseline(by_solver, baseline)
        row = [str(n), range_label(kind, range_factor, ranges[kind])]
        if several_kinds:
            row.append(kind)
        row.append(dtype)
        for solver in solvers:
            t = by_solver.get(solver)
            if t is None or not t.timed:
                row.append(t.status if t else "-")
                continue
            text = ms_text(t.median_ms) + (" past limit" if t.status == "timeout" else "")
            if base is not None and solver not in base_names:
                text += f" ({base.median_ms / t.median_ms:.2f}×)"
            if solver == "auto" and t.engine:
                text += f" {t.engine}"
            row.append(text)
        rows.append(row)
    return rows
