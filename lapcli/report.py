"""Render a SolveReport for people (Rich, on stderr). The report's schema lives in results.py and
the step schema in steps.py; this module only draws them. A stack's report gets one summary line."""

from __future__ import annotations

from .results import SolveReport
from .steps import STEP_NAMES


def render_summary(report: SolveReport, console, announced=()) -> None:
    """Print the human summary (objective, solver, device, total time, step table) to ``console``;
    the report's notes but those ``announced`` already (the reader's, said ahead of the solve)."""
    if console.quiet:  # --quiet: build nothing (Rich's tables cost a one-shot solve ~20 ms)
        return
    from rich.markup import escape
    from rich.table import Table

    console.print(
        f"[bold]objective[/] {report.objective}   [bold]solver[/] {report.solver}   "
        f"[bold]device[/] {report.device}   [bold]dtype[/] {report.dtype}   "
        f"[bold]size[/] {report.n_rows}×{report.n_cols}   [bold]total[/] {report.total_ms:.3f} ms"
    )
    if report.reason:
        console.print(f"[dim]{escape(report.reason)}[/]")
    certificate = report.certificate
    if report.certified:
        within = certificate.get("objective_within")
        within = f"objective within {within:.3g} of the optimum; " if within else ""  # integers: exact
        of = f" for {certificate['of']}" if certificate.get("of") else ""  # (dtype rounding asked for)
        console.print(f"[green]certified optimal{of}[/] [dim]({within}duals: min reduced cost {certificate['min_slack']:.6g}, "
                      f"tolerance {certificate['tolerance']:.3g}, checked on the {certificate['where']} in "
                      f"{certificate['ms']:.3f} ms)[/]")
    elif certificate.get("why"):
        console.print(f"[dim]not certified: {escape(certificate['why'])}[/]")
    for note in report.notes:
        if note not in announced:
            console.print(f"[yellow]note[/] {escape(note)}")
    if not report.steps:  # (device "none": an empty problem, which no engine ran)
        why = "nothing to solve" if report.device == "none" else "this solver does not run the six Hungarian steps"
        console.print(f"[dim]{why}: no step table[/]")
        return
    hungarian = all(STEP_NAMES.get(s.step) == s.name for s in report.steps)  # else the engine's own phases
    table = Table(title="Hungarian steps" if hungarian else f"{report.solver}'s steps", title_justify="left")
    table.add_column("step", justify="right")
    table.add_column("name")
    table.add_column("count", justify="right")
    table.add_column("ms", justify="right")
    table.add_column("share", justify="right")
    total = sum(s.ms for s in report.steps) or 1.0
    for s in report.steps:
        table.add_row(str(s.step), s.name, str(s.count), f"{s.ms:.3f}", f"{100 * s.ms / total:.1f}%")
    console.print(table)
    timing_keys = ("compile_ms", "h2d_ms", "kernel_ms", "d2h_ms", "grid", "block")
    extras = [f"{key} {report.details[key]}" for key in timing_keys if key in report.details]
    if extras:
        console.print("[dim]" + "   ".join(extras) + "[/]")


def render_batch_summary(report, console) -> None:
    """One line for a whole stack (a SolveReport with ``batch``): batch, shape, engine, device, time, throughput and
    whether every answer is certified; no per-problem table (the objectives are in --json)."""
    console.print(
        f"[bold]batch[/] {report.batch}   [bold]size[/] "
        f"{'several' if report.n_rows < 0 else f'{report.n_rows}×{report.n_cols}'}   "
        f"[bold]solver[/] {report.solver}   [bold]device[/] {report.device}   [bold]dtype[/] {report.dtype}   "
        f"[bold]total[/] {report.total_ms:.3f} ms   [bold]problems/s[/] {report.problems_per_second:,.0f}   "
        f"[bold]certified[/] {'yes' if report.certified else 'no'}"
    )
    if report.reason:
        from rich.markup import escape

        console.print(f"[dim]{escape(report.reason)}[/]")
