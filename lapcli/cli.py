"""``lap``: the command line. Parses, validates and formats; the library does the work.

stdout carries data only (NPY, CSV, JSON); people read stderr. Exit codes: 0 success, 1 the
problem has no answer or a solver failed (e.g. "cost matrix is infeasible"), 2 bad input or
options, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM; no partial file either). Errors are
one line, never a traceback.
"""

from __future__ import annotations

import json
import signal
import sys

import click

from . import __version__
from .cli_support import FailedError, FiniteFloatRange, InputError, OneLineGroup, run_library_call, stderr_console
from .generate import GENERATED_DTYPES, KINDS, check_options, generate, new_seed
from .bench_cli import bench_command
from .io import (
    ASSIGNMENT_SUFFIXES,
    DUALS_SUFFIXES,
    MATRIX_SUFFIXES,
    assignment_bytes,
    duals_bytes,
    check_output_path,
    read_matrix_with_info,
    write_bytes,
    write_matrix,
)
from .engines.registry import solver_choices
from .problem import WORK_DTYPES


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lap", message="%(prog)s (lapcli) %(version)s")
def cli():
    """Linear assignment on the GPU: classical Hungarian in one cooperative CUDA launch."""


# ----------------------------------------------------------------------------- generate
@cli.command("generate")
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Rows.")
@click.option("--m", "m", type=click.IntRange(min=1), help="Columns (default: n).")
@click.option("--range", "range_factor", type=FiniteFloatRange(0.001, 1000), default=1.0, show_default=True,
              help="R: integers uniform in [0, max(1, round(R·n))).")
@click.option("--seed", type=click.IntRange(min=0), help="Seed (default: random, printed to stderr).")
@click.option("--dtype", type=click.Choice(GENERATED_DTYPES), help="Default: int32 if the values fit, else int64; float64 for float kinds.")
@click.option("--kind", type=click.Choice(KINDS), default="uniform", show_default=True)
@click.option("-o", "--output", help="File (.npy, .csv, .h5/.hdf5) or '-' for NPY on stdout (the default when it is not a terminal).")
@click.option("--dataset", default="costs", show_default=True, help="HDF5 dataset name.")
@click.option("--quiet", "-q", is_flag=True, help="No messages on stderr.")
def generate_command(n, m, range_factor, seed, dtype, kind, output, dataset, quiet):
    """Write a reproducible random cost matrix."""
    console = stderr_console(quiet)
    if output == "-":
        output = None  # NPY on stdout, as without -o
    if output is None and sys.stdout.isatty():
        raise InputError("stdout is a terminal; give -o FILE (.npy, .csv, .h5) or pipe into 'lap solve -'")
    if output is not None:
        run_library_call(check_output_path, output, MATRIX_SUFFIXES[:2] + (".h5", ".hdf5"), "matrix")
    run_library_call(check_options, n, m or n, range_factor, kind, dtype)
    if seed is None:
        seed = new_seed()
        console.print(f"seed {seed}")
    rows = n
    if rows >= 4096 and console.is_terminal and not quiet:
        from rich.progress import Progress

        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("generating", total=rows)
            matrix = run_library_call(generate, n, m, range_factor=range_factor, seed=seed, kind=kind,
                                      dtype=dtype, progress=lambda done: bar.update(task, completed=done))
    else:
        matrix = run_library_call(generate, n, m, range_factor=range_factor, seed=seed, kind=kind, dtype=dtype)
    if output is None:
        import io

        import numpy as np

        buffer = io.BytesIO()
        np.save(buffer, matrix)
        write_bytes("-", buffer.getvalue())
    else:
        run_library_call(write_matrix, output, matrix, dataset)
        console.print(f"wrote {output} ({matrix.shape[0]}×{matrix.shape[1]} {matrix.dtype})")


# ----------------------------------------------------------------------------- solve
@cli.command("solve")
@click.argument("input_spec", metavar="INPUT")
@click.option("--solver", type=click.Choice(solver_choices(batch=None)), default="auto", show_default=True,
              help="Engine ('lap info' lists them and says which can run here).")
@click.option("--maximize", is_flag=True, help="Maximise the total instead of minimising it.")
@click.option("--dtype", type=click.Choice(WORK_DTYPES), help="Working dtype of the Hungarian solvers.")
@click.option("--dataset", help="HDF5 dataset (or write INPUT as FILE.h5:/path).")
@click.option("--header/--no-header", default=None,
              help="Text input: the first line is (not) a header. Default: a first line without numbers is one.")
@click.option("--index-col", is_flag=True, help="Text input: drop the first column (pandas' to_csv() index).")
@click.option("-o", "--output", help="Assignment: .csv (row,col), .npy (column of each row), .json; '-' = CSV on stdout.")
@click.option("--report", "report_path", help="Write the JSON report to this file.")
@click.option("--json", "json_stdout", is_flag=True, help="Print the JSON report on stdout.")
@click.option("--duals", "duals_path", help="Write the duals u (rows), v (columns): .npz or .json.")
@click.option("--cost-limit", type=FiniteFloatRange(), help="As lapjv: a row whose pair would cost more stays unassigned (-1).")
@click.option("--device", type=click.IntRange(min=0), help="CUDA device number (default: the current one).")
@click.option("--timeout", type=FiniteFloatRange(min=0, min_open=True), help="Seconds before the CUDA solver gives up.")
@click.option("--quiet", "-q", is_flag=True, help="No summary on stderr.")
def solve_command(input_spec, solver, maximize, dtype, dataset, header, index_col, output, report_path, json_stdout,
                  duals_path, cost_limit, device, timeout, quiet):
    """Solve the assignment problem for INPUT (.npy, .csv/.tsv/.txt, .h5/.hdf5, or - for stdin)."""
    if output == "-" and json_stdout:
        raise InputError("-o - and --json both write to stdout; send one of them to a file")
    if output is not None:
        run_library_call(check_output_path, output, ASSIGNMENT_SUFFIXES, "assignment")
    if report_path is not None:
        run_library_call(check_output_path, report_path, (".json",), "report")
    if duals_path is not None:
        run_library_call(check_output_path, duals_path, DUALS_SUFFIXES, "duals")
    cost, source = run_library_call(read_matrix_with_info, input_spec, dataset, header=header, index_col=index_col)
    for note in source.notes:
        stderr_console(quiet).print(note, markup=False, emoji=False, soft_wrap=True)
    from .facade import solve

    solution = run_library_call(solve, cost, solver=solver, maximize=maximize, dtype=dtype, timeout=timeout,
                                device=device, cost_limit=cost_limit)
    solution.report.notes.extend(source.notes)
    report = solution.report
    if duals_path is not None and solution.duals is None:
        raise FailedError(f"--duals: solver {report.solver} gives no duals; use a Hungarian engine (cuda, numpy)")
    if output is not None:
        data = assignment_bytes(output, solution.row_ind, solution.col_ind, report.n_rows)
        run_library_call(write_bytes, output, data)
    if duals_path is not None:
        run_library_call(write_bytes, duals_path, duals_bytes(duals_path, *solution.duals))
    report_json = json.dumps(report.to_dict(), indent=2) + "\n"
    if report_path is not None:
        run_library_call(write_bytes, report_path, report_json.encode())
    if json_stdout:
        write_bytes("-", report_json.encode())
    if not quiet:  # --quiet imports no Rich at all
        from .report import render_summary

        render_summary(report, stderr_console(quiet))


# ----------------------------------------------------------------------------- info
@cli.command("info")
@click.option("--json", "json_stdout", is_flag=True, help="Print the same as JSON on stdout.")
def info_command(json_stdout):
    """List the engines, whether each can run here (and why not), the devices and versions."""
    from .info import collect, render

    facts = collect()
    if json_stdout:
        write_bytes("-", (json.dumps(facts, indent=2) + "\n").encode())
    else:
        render(facts, stderr_console(False, stderr=False))


# ----------------------------------------------------------------------------- bench
cli.add_command(bench_command, "bench")


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that it unwinds like Ctrl-C: `atomic_output`
    removes its temporary file. A BaseException, so that no `except Exception` swallows it."""


def raise_terminated(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the clean-up short
    raise Terminated()


def main(argv: list[str] | None = None) -> None:
    """Console entry point: Click without its 'Aborted!' and tracebacks; Ctrl-C exits 130, SIGTERM 143."""
    try:
        previous = signal.signal(signal.SIGTERM, raise_terminated)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        code = cli.main(args=argv, prog_name="lap", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("lap: interrupted", err=True)
        sys.exit(130)
    except Terminated:
        click.echo("lap: terminated", err=True)
        sys.exit(128 + signal.SIGTERM)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except BrokenPipeError:  # the reader of our stdout went away (e.g. `| head`)
        sys.exit(1)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
