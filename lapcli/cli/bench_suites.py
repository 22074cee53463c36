"""``lap bench``'s suites of their own cells and tables: the batch and matcher suites
(lapcli.bench.batch, lapcli.bench.matcher) and the point-set suite (lapcli.bench.points), and the
sweep's progress line they share with the matrix suites (lapcli/cli/bench.py)."""

from __future__ import annotations

from .support import FailedError, InputError, run_library_call


def progress_bar(console, quiet: bool):
    """A sweep's live progress line: on a terminal only (elsewhere progress_reporter's lines say
    how far it got, and a bar stopped by a signal printed an empty line before the last one)."""
    from rich.progress import Progress

    return Progress(console=None if quiet else console, transient=True, disable=quiet or not console.is_terminal)


def progress_reporter(bar, task, console):
    """A sweep's progress: the live line on a terminal; in a log (a pipe or a file, ``--quiet``
    apart) also one line a finished solve, so that a run stopped by a time limit shows how far it
    got and where its time went."""
    from rich.markup import escape

    logged = not console.is_terminal and not getattr(console, "quiet", False)

    def report(text: str) -> None:
        bar.update(task, advance=1, description=text)
        if logged:
            console.print(escape(text))

    return report


def batch_suite(console, solvers, repeat, warmup, seed, scale, json_path, quiet, suite: str = "batch") -> None:
    """``lap bench --suite batch`` (lapcli.bench.batch) or ``--suite matcher`` (lapcli.bench.matcher):
    runners over the suite's cells, one table, the JSON record."""
    from rich.markup import escape
    from rich.table import Table

    from ..bench import batch as bench_batch
    from ..bench.batch import (
        BatchMismatch,
        BatchSettings,
        batch_environment,
        batch_table_rows,
        run_batch_bench,
        write_batch_json,
    )
    from ..io.targets import check_output_path

    if suite == "matcher":
        from ..bench import matcher as bench_matcher

        runners = bench_matcher.matcher_runners()
    else:
        runners = bench_batch.batch_runners()
    named = solvers not in (None, ("auto",))  # None: --solvers not given
    wanted = solvers if named else tuple(runners)
    for name in wanted:
        if name not in runners:
            raise InputError(f"unknown {suite} runner {name!r}; choose from {', '.join(runners)}")
    skipped = {}
    for name in wanted:
        available, why = runners[name].available()
        if not available and named:  # as a --solver this machine cannot run
            raise InputError(f"{suite} runner {name!r} cannot run here: {why}")
        if not available:
            skipped[name] = why
    if json_path:
        run_library_call(check_output_path, json_path, (".json",), "output")
    chosen = tuple(name for name in wanted if name not in skipped)
    for name, why in skipped.items():
        console.print(f"[dim]skipped {name}: {escape(why)}[/]")
    if not chosen:
        raise FailedError(f"no {suite} runner can run here")
    settings = BatchSettings(cells=bench_batch.BATCH_CELLS, runners=chosen, repeat=repeat, warmup=warmup, seed=seed,
                             scale=scale, min_seconds=bench_batch.SUITE_MIN_SECONDS)
    env = batch_environment()
    cells = bench_matcher.MATCHER_CELLS if suite == "matcher" else ()
    total = len(cells) * len(chosen) if suite == "matcher" else len(settings.cells) * len(settings.kinds) * len(chosen)
    failure = None
    with progress_bar(console, quiet) as bar:
        task = bar.add_task("benchmarking", total=total)
        progress = progress_reporter(bar, task, console)
        if suite == "matcher":
            results, failures = bench_matcher.run_matcher_bench(
                cells, chosen, runners, repeat=repeat, warmup=warmup, seed=seed,
                min_seconds=bench_batch.SUITE_MIN_SECONDS, on_progress=progress)
            failure = "; ".join(failures) or None
            settings.cells, settings.kinds = cells, ()  # (B, Q, K): its images' targets are its kind
        else:
            try:
                results = run_batch_bench(settings, runners, on_progress=progress)
            except BatchMismatch as mismatch:
                results, failure = mismatch.results, str(mismatch)
    base = "torch-linear-assignment" if any(n.startswith("torch-la") for n in chosen) else "the scipy loop"
    table = Table(title=f"median ms per batch (speedup over {base}) on {env.get('device')}", title_justify="left")
    for column in ("B", "Q" if suite == "matcher" else "n", "targets" if suite == "matcher" else "kind", *chosen):
        table.add_column(column, justify="right")
    for row in batch_table_rows(results, chosen):
        table.add_row(*row)
    console.print(table)
    if suite == "matcher":
        console.print("[dim]k_i targets per image uniform in 1..K; a float32 U[0, 1) torch block, on the GPU where "
                      "torch sees one; the scipy loop includes its copy to the host[/]")
    else:
        console.print("[dim]int: float32 integers uniform in [0, 10n); float: float32 U[0, 1); "
                      "d2d: stack on the GPU, result left there[/]")
    if json_path:
        write_batch_json(json_path, settings, results, env, skipped, suite)
    failed = [f"{t.runner} B={t.batch} n={t.n} {t.kind}: {t.message}" for t in results if t.status == "error"]
    invalid = any(t.status == "invalid" for t in results)
    fail_if_any(failure and f"{'answers failed their check' if invalid else 'objectives disagree'}: {failure}", failed)


def points_suite(console, solvers, sizes, repeat, warmup, seed, json_path, quiet, timeout=None) -> None:
    """``lap bench --suite points`` (lapcli.bench.points): every runner on each cell, one table;
    ``timeout`` seconds a solve (default lapcli.bench.points.CALL_LIMIT_S)."""
    import json as json_module

    from rich.table import Table

    from ..bench import points as bench_points
    from ..bench.batch import batch_environment
    from ..io.targets import check_output_path
    from ..io.write import write_bytes

    runners = bench_points.point_runners()
    here, why_not = bench_points.runners_here(runners)
    chosen = here if solvers is None else solvers  # by default what runs here; named ones must (auto alone too)
    for name in chosen:
        if name not in runners:
            raise InputError(f"unknown points runner {name!r}; choose from {', '.join(runners)}")
        if name not in here:
            raise InputError(f"points runner {name!r} cannot run here: {why_not}")
    cells = bench_points.POINT_CELLS
    if sizes:
        have = sorted({n for n, _, _ in cells})
        missing = sorted(set(sizes) - set(have))
        if missing:  # as the other suites say it
            raise InputError(f"--suite points has no cells of n = {', '.join(map(str, missing))} "
                             f"(its sizes: {', '.join(map(str, have))})")
        cells = tuple(cell for cell in cells if cell[0] in sizes)
    limits = bench_points.runner_limits()
    if not any(bench_points.runs(limits, name, n) for n, _, _ in cells for name in chosen):  # it would time nothing
        raise InputError("no chosen points runner runs these sizes here ("
                         + ", ".join(f"{name} up to n = {limits[name]}" for name in chosen) + ")")
    if json_path:
        run_library_call(check_output_path, json_path, (".json",), "output")
    with progress_bar(console, quiet) as bar:
        task = bar.add_task("benchmarking", total=len(cells) * len(chosen))
        results = bench_points.run_points_bench(
            cells, runners, chosen, repeat=repeat, warmup=warmup, seed=seed,
            on_progress=progress_reporter(bar, task, console), timeout=timeout,
            load_programs=bench_points.load_point_programs)
    env = batch_environment()
    table = Table(title=f"median ms, host arrays in, certified answer out, on {env.get('device')}",
                  title_justify="left")
    for column in ("n", "kind", "metric", *chosen):
        table.add_column(column, justify="right")
    for n, kind, metric in cells:
        row = [str(n), kind, metric]
        for name in chosen:
            timing = next(t for t in results if (t.n, t.kind, t.metric, t.runner) == (n, kind, metric, name))
            row.append(f"{timing.median_ms:.1f}" if timing.status == "ok" else f"{timing.median_ms:.1f} past limit"
                       if timing.status == "timeout" and timing.times_ms else timing.status)
        table.add_row(*row)
    console.print(table)
    if json_path:
        settings = {"runners": list(chosen), "repeat": repeat, "warmup": warmup, "seed": seed,
                    "timeout_s": timeout or bench_points.CALL_LIMIT_S, "cells": [list(cell) for cell in cells]}
        record = {"suite": "points", "environment": env, "seed": seed, "settings": settings,
                  "results": [vars(t) | {"median_ms": t.median_ms} for t in results]}
        run_library_call(write_bytes, json_path, (json_module.dumps(record, indent=2) + "\n").encode())
    failures = [f"{t.runner} n={t.n} {t.kind} {t.metric}: {t.message}" for t in results if t.status in ("mismatch", "error")]
    if failures:
        raise FailedError("; ".join(failures))


def fail_if_any(disagreement: str | None, failed: list[str]) -> None:
    """Exit 1 (FailedError) after the table and the files, naming what went wrong: answers that
    disagree or are invalid, and solves that failed, both where both happened (a solver's failure
    is exit 1, as lap solve's; one was left out of the message beside a disagreement)."""
    said = [disagreement] if disagreement else []
    if failed:
        said.append(f"{len(failed)} solve(s) failed: {failed[0]}" + (" (and more)" if len(failed) > 1 else ""))
    if said:
        raise FailedError("; ".join(said))
