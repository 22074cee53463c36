"""``lap bench``: the Click face of lapcli.bench."""

from __future__ import annotations

import math

import click

from ..bench.outputs import csv_bytes, environment, json_bytes, plot_bytes
from ..bench.runner import bench_solvers, check_cells, run_bench, solver_available
from ..bench.suites import (
    SUITES,
    BenchSettings,
    ObjectiveMismatch,
    fixed_options,
    grid_cells,
    open_suite,
)
from ..bench.table import baseline_title, results_table_columns, results_table_rows
from ..engines import registry
from ..generate import FLOAT_KINDS, KINDS, RANGELESS_KINDS
from ..work_dtypes import WORK_DTYPES
from .bench_suites import batch_suite, fail_if_any, points_suite, progress_bar, progress_reporter
from .support import (
    FiniteFloatRange,
    InputError,
    OneLineCommand,
    check_distinct_outputs,
    run_library_call,
    stderr_console,
)


def csv_list(kind, check=None):
    """A comma-separated option: at least one value, none twice, each converted by ``kind`` and
    accepted by ``check`` (which returns why a value is wrong, or None)."""

    def parse(ctx, param, value):
        if value is None:
            return None
        try:
            items = tuple(kind(item.strip()) for item in value.split(",") if item.strip())
        except ValueError:
            raise click.BadParameter(f"expected a comma-separated list, got {value!r}") from None
        if not items:
            raise click.BadParameter(f"expected at least one value, got {value!r}")
        repeated = [item for item in dict.fromkeys(items) if items.count(item) > 1]
        if repeated:  # the tables look results up by value: a repeat showed one run's numbers twice
            raise click.BadParameter(f"{repeated[0]!r} is named more than once")
        for item in items:
            problem = check(item) if check else None
            if problem:
                raise click.BadParameter(problem)
        return items

    return parse


def size_problem(n: int) -> str | None:
    return None if n >= 1 else f"a size must be at least 1, got {n}"


def range_problem(r: float) -> str | None:
    if not math.isfinite(r):
        return f"a range must be a finite number, got {r}"
    return None if 0.001 <= r <= 1000 else f"range {r} is outside 0.001 … 1000"


@click.command(cls=OneLineCommand)
@click.option("--suite", type=click.Choice(sorted(SUITES) + ["batch", "matcher", "points"]),
              help="Preset sizes × ranges (papers: Kawtikwar et al. Tables IV–X); ranges: every cost range at n = 1024-8192, "
                   "n = 1024 … 8192 × int32 [0, R·n) for R = 0.1 … 1000, float32 and float64 U[0, 1) and "
                   "geometric, kinds and dtypes fixed; structured: n = 2048 … 32768, squared 2-D distances as "
                   "int32 (geometric-int) and float64 beside U[0, 1) floats and R = 1000 integers; batch: eight stacks, B×n = 10000×16 … 64×1024, "
                   "through every batch runner; matcher: DETR's matcher, six B×Q×K ragged blocks on the GPU, "
                   "lapcli's three ragged forms beside the scipy loop, torch-linear-assignment and HA4DETR; points: two 2-D "
                   "point sets, n = 2048 … 262144 (--sizes to choose), costs from the coordinates beside the "
                   "dense matrix and scipy.")
@click.option("--sizes", callback=csv_list(int, size_problem),
              help="Comma-separated n, e.g. 256,1024; with --suite, only its cells of those n.")
@click.option("--ranges", callback=csv_list(float, range_problem), help="Comma-separated R (costs in [0, R·n)).")
@click.option("--dtypes", callback=csv_list(str),
              help="Comma-separated from int32, int64, float32, float64 (default: int32 for --kind uniform, float64 for the float kinds).")
@click.option("--kind", type=click.Choice(KINDS), default="uniform", show_default=True)
@click.option("--solvers", callback=csv_list(str), default="auto", show_default=True,
              help="Comma-separated engines ('lap info') and peers (a suite's own runners: docs/cli.md), or "
                   "auto = every engine available here but numpy (numpy too when no GPU is present).")
@click.option("--repeat", type=click.IntRange(min=1), default=3, show_default=True,
              help="Timed solves per cell, their median shown (--suite points: one above n = 8,192).")
@click.option("--warmup", type=click.IntRange(min=0), default=1, show_default=True,
              help="Untimed solves first (--suite points above n = 8,192: the kernels loaded instead).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--timeout", type=FiniteFloatRange(min=0, min_open=True), help="Seconds per solve; slower solvers are skipped for larger n (--suite points: each cell gets the limit).")
@click.option("--baseline", callback=csv_list(str),
              help="Solver the speedups are relative to (default: the last solver); several, comma-separated: "
                   "the fastest of them in each cell.")
@click.option("--json", "json_path", help="Write every repeat, the environment and the settings.")
@click.option("--csv", "csv_path", help="Write every repeat as CSV.")
@click.option("--plot", "plot_path", help="PNG plot, time against n per range (needs lapcli[plot]).")
@click.option("--scale", type=FiniteFloatRange(0, 1, min_open=True),
              help="--suite batch: multiply every batch size by this (n is kept), e.g. 0.01 for a quick run.")
@click.option("--quiet", "-q", is_flag=True)
@click.pass_context
def bench_command(ctx, suite, sizes, ranges, dtypes, kind, solvers, repeat, warmup, seed, timeout, baseline,
                  json_path, csv_path, plot_path, scale, quiet):
    """Benchmark lapcli's solvers and peers on the same matrices (or stacks: --suite batch)."""
    from ..io.targets import check_output_path

    console = stderr_console(quiet)
    if suite in ("points", "batch", "matcher"):  # suites of their own cells: options given that do not apply
        from click.core import ParameterSource

        given = {name for name in ctx.params if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)}
        named_solvers = solvers if "solvers" in given else None  # None: what runs here
        if suite == "points":
            foreign = given & {"ranges", "dtypes", "kind", "baseline", "csv_path", "plot_path", "scale"}
            what = "cells and outputs"
        else:
            foreign = given & {"sizes", "ranges", "dtypes", "kind", "timeout", "baseline", "csv_path", "plot_path"}
            foreign |= {"scale"} if suite == "matcher" and scale is not None else set()
            what = "cells, kinds and outputs"
        if foreign:
            flags = ", ".join("--" + name.removesuffix("_path").replace("_", "-") for name in sorted(foreign))
            raise InputError(f"--suite {suite} has its own {what}; drop {flags}")
        if suite == "points":
            return points_suite(console, named_solvers, sizes, repeat, warmup, seed, json_path, quiet, timeout)
        return batch_suite(console, named_solvers, repeat, warmup, seed, scale or 1.0, json_path, quiet, suite)
    if scale is not None:
        raise InputError("--scale applies to --suite batch only")
    if suite and ranges:
        raise InputError("give either --suite or --ranges")
    groups = SUITES[suite] if suite else open_suite(grid_cells(sizes or (256, 1024), ranges or (1, 100)))
    if suite and sizes:  # a suite's cells of those sizes only (the ranges suite's n = 8192 takes long)
        groups = suite_sizes(groups, sizes, suite)
    if fixed_options(groups):
        from click.core import ParameterSource

        given = [name for name in fixed_options(groups)
                 if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT)]
        if given:
            flags = ", ".join("--" + name for name in given)
            raise InputError(f"--suite {suite} has its own kinds and dtypes; drop {flags}")
    for dtype in dtypes or ():
        if dtype not in WORK_DTYPES:
            raise InputError(f"unknown dtype {dtype!r}; choose from {', '.join(WORK_DTYPES)}")
        if kind in FLOAT_KINDS and dtype.startswith("int"):
            raise InputError(f"--kind {kind} makes fractional values; --dtypes {dtype} would truncate them "
                             "(choose float32 or float64)")
    groups = tuple(group.resolve(kind, dtypes, ranges_named=bool(ranges)) for group in groups)
    run_library_call(check_cells, groups)
    if solvers == ("auto",):
        solvers = tuple(s for s in bench_solvers() if s != "auto" and solver_available(s)[0] and s != "numpy")
        if not any(s.startswith("cuda") for s in solvers):
            solvers = ("numpy",) + solvers
    for solver in solvers:
        if solver not in bench_solvers():  # an engine of stacks or point sets solves no cell of this sweep
            what = f"{solver!r} solves no single matrix" if solver in registry.ENGINES else f"unknown solver {solver!r}"
            raise InputError(f"{what}; choose from {', '.join(bench_solvers())}")
    for solver in solvers:  # an option naming a solver this machine lacks: bad input, as an unknown one
        available, why = solver_available(solver)
        if not available:
            raise InputError(f"solver {solver!r} cannot run here: {why}")
    for name in baseline or ():
        if name not in solvers:
            raise InputError(f"--baseline {name!r} is not among the solvers ({', '.join(solvers)})")
    baseline = tuple(dict.fromkeys(baseline or (solvers[-1],)))
    baseline = baseline[0] if len(baseline) == 1 else baseline  # one name is recorded as before, a string
    for path, suffixes in ((json_path, (".json",)), (csv_path, (".csv",)), (plot_path, (".png",))):
        if path:
            run_library_call(check_output_path, path, suffixes, "output")
    check_distinct_outputs(("--json", json_path), ("--csv", csv_path), ("--plot", plot_path))
    if plot_path:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise InputError("--plot needs matplotlib: pip install 'lapcli[plot]'") from None

    settings = BenchSettings(cells=(), solvers=tuple(solvers), kind=None, groups=groups, repeat=repeat,
                             warmup=warmup, seed=seed, timeout=timeout, baseline=baseline, suite=suite)
    warm = [s for s in solvers if s.startswith("cuda")]
    if "auto" in solvers and "cuda" not in warm:  # auto runs cuda for large n when a GPU is here
        from ..cuda import probe

        warm += ["cuda"] if probe.cuda_status()[0] else []
    if warm:  # context creation and NVRTC compile stay out of the numbers
        import numpy as np

        from ..pipeline import solve

        for s in warm:
            solve(np.eye(4, dtype=np.int32), solver=s)
    env = environment()
    total = settings.cell_count * len(solvers)
    with progress_bar(console, quiet) as bar:
        task = bar.add_task("benchmarking", total=total)

        def bench_or_mismatch():  # a mismatch is reported with the table; other errors as run_library_call says
            try:
                return run_bench(settings, on_progress=progress_reporter(bar, task, console)), None
            except ObjectiveMismatch as mismatch:
                return mismatch.results, str(mismatch)

        results, failure = run_library_call(bench_or_mismatch)

    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"median ms (speedup over {baseline_title(baseline)}) on {env.get('device')}",
                  title_justify="left")
    for column in results_table_columns(results, solvers):
        table.add_column(column, justify="right")
    rows = results_table_rows(results, solvers, baseline)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    notes = []
    if any(row[1] == "—" for row in rows):
        notes.append(f"R —: the kind's values do not depend on R ({', '.join(RANGELESS_KINDS)})")
    if "auto" in solvers:
        notes.append("auto: the engine it chose follows its time")
    if notes:
        console.print(f"[dim]{escape('; '.join(notes))}[/]")
    from ..io.write import write_together

    run_library_call(write_together, [(path, data()) for path, data in (  # all or none of the files
        (json_path, lambda: json_bytes(settings, results, env)), (csv_path, lambda: csv_bytes(results, env)),
        (plot_path, lambda: plot_bytes(results, env))) if path])
    failed = [f"{t.solver} n={t.n} R={t.range_factor} {t.dtype}: {t.message}" for t in results if t.status == "error"]
    fail_if_any(failure and f"objectives disagree: {failure}", failed)


def suite_sizes(groups, sizes, suite: str):
    """The suite's groups cut down to the cells of ``sizes``; a size the suite lacks is bad input."""
    from dataclasses import replace

    have = {n for group in groups for n, _ in group.cells}
    missing = sorted(set(sizes) - have)
    if missing:
        raise InputError(f"--suite {suite} has no cells of n = {', '.join(map(str, missing))} "
                         f"(its sizes: {', '.join(map(str, sorted(have)))})")
    return tuple(replace(group, cells=tuple(c for c in group.cells if c[0] in sizes)) for group in groups)
