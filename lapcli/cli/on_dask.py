"""``lap solve`` over Dask: several INPUTs, each one task on a worker (lapcli.scale)."""

from __future__ import annotations

import logging

import click

from ..io.read import read_matrix_with_info
from .support import InputError, Outputs, announce_input, check_rank_options, emit_report, named_by_input, run_library_call


def dask_by_default() -> bool:
    """Several inputs go to Dask by themselves only where it pays: more than one GPU, Dask installed."""
    from ..scale import dask_available, visible_gpus

    return visible_gpus() > 1 and dask_available()


def solve_on_dask(solve_inputs, input_specs, read_options, options, scheduler, several, console, report_path,
                  json_stdout) -> None:
    """Each input one Dask task (stdin is read here); the output as the in-process path gives it, in
    input order. A failed input prints its one-line error and sets the exit code (2: bad input, 1:
    infeasible or solver failure); the others still give their output."""
    from ..scale import Solved

    items, local_notes, failed_here = [], {}, {}  # (failed_here: stdin's refusal, as a worker reports a file's)
    for index, spec in enumerate(input_specs):
        if spec == "-":
            try:
                cost, source = run_library_call(read_matrix_with_info, spec, **read_options)
                check_rank_options(spec, cost.ndim, options["solver"], None, options["cost_limit"])
            except InputError as refused:
                failed_here[index] = refused.format_message()
                continue
            local_notes[len(items)] = source.notes
            items.append(cost)
        else:
            items.append(spec)
    quiet_dask_logs()
    call = dict(scheduler=scheduler, read_options=read_options, silence_logs=logging.CRITICAL, **options)
    if items and console.is_terminal and not console.quiet:
        from rich.progress import Progress

        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("solving", total=len(items))
            results = run_library_call(solve_inputs, items, **call,
                                       progress=lambda done, total: bar.update(task, completed=done))
    else:
        results = run_library_call(solve_inputs, items, **call) if items else []
    code, outputs = 0, Outputs()
    results = iter(results)
    for index, spec in enumerate(input_specs):
        if index in failed_here:
            click.echo(f"Error: {named_by_input(spec, failed_here[index])}", err=True)
            code = 2
            continue
        result = next(results)
        if not isinstance(result, Solved):  # named as in process: not twice where the message says it
            click.echo(f"Error: {named_by_input(spec, result.message)}", err=True)
            code = max(code, 2 if result.bad_input else 1)
            continue
        notes = local_notes.get(result.index, []) + result.source_notes
        announce_input(spec, notes, several, console)
        emit_report(spec, result.solution.report, notes, several, report_path, json_stdout, outputs, console)
    if code:
        raise click.exceptions.Exit(code)


def quiet_dask_logs() -> None:
    """One line an input on stderr: Dask's own logs (a worker restarted, keys it could not gather, a
    scheduler gone) stay in this process's loggers and a local cluster's processes, at CRITICAL.
    Every ``distributed.*`` logger: importing distributed sets some its own level (the client's at
    WARNING), which the parent's alone did not cover."""
    try:
        import distributed  # noqa: F401 - its import configures the loggers set here
    except ImportError:  # solve_inputs says how to install it
        return
    names = [name for name in logging.root.manager.loggerDict if name.startswith("distributed.")]
    for name in ("distributed", *names):
        logging.getLogger(name).setLevel(logging.CRITICAL)
