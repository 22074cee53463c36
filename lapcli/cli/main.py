"""``lap``: the command line. Parses, validates and formats; the library does the work.

stdout carries data only (NPY, CSV, JSON); people read stderr. Exit codes: 0 success, 1 the
problem has no answer or a solver failed (e.g. "cost matrix is infeasible"), or an output could not
be written (a full disk; a closed stdout without a word), 2 bad input or options, 130 interrupted
(Ctrl-C), 143 terminated (SIGTERM; no partial file either). Errors are one line, never a traceback.
"""

from __future__ import annotations

import errno
import json
import signal
import sys
from pathlib import Path

import click
from click.core import ParameterSource

from .. import __version__
from ..engines import auto
from ..engines.registry import solver_choices
from ..errors import LapOutputError, SolverUnavailable
from ..generate import (
    GENERATED_DTYPES,
    KINDS,
    POINT_KINDS,
    RANGELESS_KINDS,
    check_options,
    generate_blocks,
    generate_stack_blocks,
    new_seed,
)
from ..io.formats import ASSIGNMENT_SUFFIXES, DUALS_SUFFIXES, HDF5_SUFFIXES, TEXT_SUFFIXES, split_hdf5_path
from ..io.read import Batch, input_rank, read_matrix_with_info, text_read_options
from ..io.targets import check_keeps_hdf5_objects, check_output_path, check_room
from ..io.write import (
    check_stack_output,
    reporting_write_errors,
    stack_assignment_bytes,
    write_bytes,
    write_matrix_blocks,
)
from ..points import METRICS
from ..work_dtypes import WORK_DTYPES
from . import on_dask
from .bench import bench_command
from .support import (
    ClosedStdin,
    ClosedStdout,
    ExactNumber,
    FailedError,
    FiniteFloatRange,
    InputError,
    Interrupted,
    MessagesStderr,
    OneLineGroup,
    Outputs,
    announce_input,
    check_distinct_outputs,
    check_rank_options,
    emit_report,
    named_by_input,
    run_library_call,
    stderr_console,
    stdout_by_name,
    write_solution,
)


@click.group(cls=OneLineGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="lap", message="%(prog)s (lapcli) %(version)s")
def cli():
    """Linear assignment on the GPU: classical Hungarian in one cooperative CUDA launch."""


# ----------------------------------------------------------------------------- generate
@cli.command("generate")
@click.option("--n", "n", type=click.IntRange(min=1), required=True, help="Rows.")
@click.option("--m", "m", type=click.IntRange(min=1), help="Columns (default: n).")
@click.option("--batch", type=click.IntRange(min=1),
              help="Write a stack of BATCH problems (B×n×m; .npy or .h5), problem b seeded from --seed and b.")
@click.option("--ragged", is_flag=True, help="With --batch: problem b of a shape drawn from 1..n × 1..m (.npz, or .h5 "
              "with a group of datasets 0 … B−1); the B shapes are drawn together from --seed and B.")
@click.option("--range", "range_factor", type=FiniteFloatRange(0.001, 1000), default=1.0, show_default=True,
              help="R: integers uniform in [0, max(1, round(R·n))).")
@click.option("--seed", type=click.IntRange(min=0), help="Seed (default: random, printed to stderr).")
@click.option("--dtype", type=click.Choice(GENERATED_DTYPES), help="Default: int32 if the values fit, else int64; float64 for float kinds.")
@click.option("--kind", type=click.Choice(sorted({*KINDS, *POINT_KINDS}, key=[*KINDS, *POINT_KINDS].index)),
              default="uniform", show_default=True, help=f"With --points: {' or '.join(POINT_KINDS)}.")
@click.option("--points", "points", is_flag=True,
              help="Write n points of --d coordinates (one row each; a second set needs another --seed) "
                   "for 'lap solve --points'.")
@click.option("--d", "dim", type=click.IntRange(1, 32), default=2, show_default=True,  # lapcli.points.MAX_DIM
              help="With --points: coordinates a point.")
@click.option("-o", "--output", callback=stdout_by_name,
              help="File (.npy, .csv, .h5/.hdf5, FILE.h5:/path as solve reads it) or '-' (or /dev/stdout) for NPY on stdout (the default when it is not a terminal).")
@click.option("--dataset", default="costs", show_default=True, help="HDF5 dataset name.")
@click.option("--quiet", "-q", is_flag=True, help="No messages on stderr.")
def generate_command(n, m, batch, ragged, range_factor, seed, dtype, kind, points, dim, output, dataset, quiet):
    """Write a reproducible random cost matrix (with --batch, a stack of them; with --points, a point set)."""
    console = stderr_console(quiet)
    given = click.get_current_context().get_parameter_source
    path_text, inner = split_hdf5_path(output) if output else (output, None)
    named_by = "--dataset"
    if path_text != output and Path(path_text).suffix.lower() in HDF5_SUFFIXES:  # FILE.h5:/path (or FILE.h5:), as solve reads it
        if inner is not None and given("dataset") != ParameterSource.DEFAULT and dataset.strip("/") != inner.strip("/"):
            raise InputError(f"{output} names the dataset {inner} and --dataset names {dataset}; give one")
        output, dataset, named_by = path_text, inner or dataset, f"-o {output}" if inner else named_by
    parts = dataset.strip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):  # HDF5's root, or a path h5py cannot create
        raise InputError(f"{named_by} must name a dataset or group (names between slashes), got {dataset!r}")
    dataset = "/".join(parts)
    if output and Path(output).suffix.lower() in HDF5_SUFFIXES:  # other datasets there are the user's
        run_library_call(check_keeps_hdf5_objects, output, dataset)
    given_range = given("range_factor") != ParameterSource.DEFAULT
    if given("dataset") != ParameterSource.DEFAULT and Path(output or "-").suffix.lower() not in HDF5_SUFFIXES:
        raise InputError(f"--dataset {dataset} names an HDF5 dataset, but {output or 'stdout'} is not .h5/.hdf5")
    if points:
        from .points import generate_point_set

        for flag, value in (("--range", given_range or None), ("--ragged", ragged or None)):
            if value is not None:  # a point set has no range and no shapes: said, not ignored
                raise InputError(f"{flag} does not go with --points")
        return generate_point_set(console, n, m, batch, dim, kind, seed, dtype, output, dataset)
    if kind not in KINDS:
        raise InputError(f"--kind {kind} makes point sets: add --points")
    if given("dim") != ParameterSource.DEFAULT:
        raise InputError("--d is the dimension of point sets: add --points")
    if given_range and kind in RANGELESS_KINDS:  # said, not ignored
        raise InputError(f"--range sets the range of uniform integers; --kind {kind} does not take one")
    if ragged:
        return generate_ragged_batch(console, batch, n, m, range_factor, seed, dtype, kind, output, dataset)
    if output == "-":
        output = None  # NPY on stdout, as without -o
    if output is None and sys.stdout.isatty():
        raise InputError("stdout is a terminal; give -o FILE (.npy, .csv, .h5) or pipe into 'lap solve -'")
    if output is not None:
        suffixes = (".npy", ".h5", ".hdf5") if batch else (".npy", ".csv", ".h5", ".hdf5")
        if batch and output.lower().endswith(TEXT_SUFFIXES):
            raise InputError(f"{output}: CSV holds one matrix; write a stack (--batch) to .npy or .h5")
        run_library_call(check_output_path, output, suffixes, "matrix")
    m = m or n
    dtype = run_library_call(check_options, n, m, range_factor, kind, dtype)
    if output is not None:
        run_library_call(check_room, output, (batch or 1) * n * m, dtype)
    if seed is None:
        seed = new_seed()
        console.print(f"seed {seed}")
    options = dict(range_factor=range_factor, seed=seed, kind=kind, dtype=dtype)
    shape, make, args, units = ((batch, n, m), generate_stack_blocks, (batch, n, m), batch) if batch \
        else ((n, m), generate_blocks, (n, m), n)

    def stream(progress=None):  # each block is written as it is made: memory holds one, not the matrix
        blocks = run_library_call(make, *args, **options, progress=progress)
        run_library_call(write_matrix_blocks, output or "-", shape, dtype, blocks, dataset)

    if n * (batch or 1) >= 4096 and console.is_terminal and not quiet:
        from rich.progress import Progress

        with Progress(console=console, transient=True) as bar:
            task = bar.add_task("generating", total=units)
            stream(progress=lambda done: bar.update(task, completed=done))
    else:
        stream()
    if output is not None:
        from rich.markup import escape  # a path may hold "[...]": printed as it is

        console.print(f"wrote {escape(output)} ({'×'.join(map(str, shape))} {dtype})")


def generate_ragged_batch(console, batch, n, m, range_factor, seed, dtype, kind, output, dataset) -> None:
    """``lap generate --batch B --ragged``: B matrices of drawn shapes, to .npz or an HDF5 group."""
    from ..generate import generate_ragged
    from ..io.write import members_bytes

    if not batch or output in (None, "-"):
        raise InputError("--ragged needs --batch and -o FILE (.npz, .h5 or .hdf5)")
    run_library_call(check_output_path, output, (".npz", ".h5", ".hdf5"), "ragged batch")
    seed = new_seed() if seed is None else seed
    arrays = run_library_call(generate_ragged, batch, n, m, range_factor=range_factor, seed=seed, kind=kind, dtype=dtype)
    run_library_call(write_bytes, output, members_bytes(output, arrays, dataset))
    from rich.markup import escape

    console.print(f"wrote {escape(output)} ({batch} problems up to {n}×{m or n} {arrays[0].dtype}, seed {seed})")


# ----------------------------------------------------------------------------- solve
@cli.command("solve")
@click.argument("input_specs", metavar="INPUT...", nargs=-1)
@click.option("--points", "point_specs", nargs=2, metavar="A B",
              help="Match two point sets instead (files of one point a row: .npy, .csv, .h5); the costs are "
                   "--metric distances, computed on the GPU where it can (no matrix).")
@click.option("--metric", type=click.Choice(METRICS, case_sensitive=False), help="With --points: scipy cdist's metric (default sqeuclidean).")
@click.option("--p", "minkowski_p", type=click.FloatRange(min=0, min_open=True),
              help="With --points --metric minkowski: the exponent (inf: chebyshev).")
@click.option("--solver", type=click.Choice(solver_choices(batch=None)), default="auto", show_default=True,
              help="Engine ('lap info' lists them and says which can run here); a stack takes auto or a batch engine.")
@click.option("--maximize", is_flag=True, help="Maximise the total instead of minimising it.")
@click.option("--dtype", type=click.Choice(WORK_DTYPES), help="Working dtype of the Hungarian solvers.")
@click.option("--dataset", help="HDF5 dataset or NPZ array (or write INPUT as FILE.h5:/path); other input refuses it.")
@click.option("--header/--no-header", default=None,
              help="Text input: the first line is (not) a header. Default: a first line without numbers is one. "
                   "Every text INPUT (both --points files) takes it.")
@click.option("--index-col", is_flag=True, help="Text input: drop the first column (pandas' to_csv() index); every "
                                                "text INPUT (both --points files) takes it.")
@click.option("-o", "--output",
              help="Assignment: .csv (row,col; a stack: problem,row,col), .npy (column of each row, -1 unassigned; "
                   "a stack: B×n), .npz (row_ind, col_ind; a batch: an array a problem), .json; '-' = CSV on stdout. "
                   "One INPUT only.")
@click.option("--report", "report_path", help="Write the JSON report to this file. One INPUT only.")
@click.option("--json", "json_stdout", is_flag=True,
              help="Print the JSON report on stdout (several INPUTs: one compact line each, in order).")
@click.option("--duals", "duals_path", help="Write the duals u (rows), v (columns): .npz or .json. Not for stacks.")
@click.option("--certify", is_flag=True,
              help="Prove scipy's, lapx's or scipy-batch's answers with recovered duals, and sorted's without a "
                   "GPU, past the default's budget (about their solve on squares, more on small or rectangular ones; "
                   "other engines always certify).")
@click.option("--cost-limit", type=ExactNumber(),
              help="As lapjv: a row whose pair would cost more stays unassigned (-1). Not for stacks.")
@click.option("--device", type=click.IntRange(min=0), help="CUDA device number (default: the current one).")
@click.option("--timeout", type=FiniteFloatRange(min=0, min_open=True), help="Seconds before the solver gives up (the GPU engines; --solver scipy, lapx or numpy cannot stop mid-solve: refused, but taken with --points, where it bounds the pass over the true costs after a solve of moved or easier sets; a cdist matrix they solve runs to its end, certificate included).")
@click.option("--dask", "use_dask", is_flag=True,
              help="Spread the INPUTs over a local Dask cluster (default with several INPUTs when several GPUs are visible).")
@click.option("--scheduler", metavar="ADDRESS", help="Spread the INPUTs over the Dask cluster of this scheduler.")
@click.option("--quiet", "-q", is_flag=True, help="No summary on stderr.")
def solve_command(input_specs, point_specs, metric, minkowski_p, solver, maximize, dtype, dataset, header, index_col,
                  output, report_path, json_stdout, duals_path, certify, cost_limit, device, timeout, use_dask,
                  scheduler, quiet):
    """Solve the assignment problem for each INPUT in order (.npy, .npz, .csv/.tsv/.txt, .h5/.hdf5, or -
    for stdin).

    A 3-D INPUT (an NPY array or HDF5 dataset of shape B×n×m) is a stack of B problems, solved in one
    batch; so are an NPZ of several matrices and an HDF5 group of 2-D datasets (--dataset GROUP), whose
    shapes may differ (one launch on a GPU; -o .npz, .csv or .json). Every INPUT's file, format and header are checked before the first is solved (its values as it is read). With --dask or --scheduler each INPUT is
    one Dask task: an INPUT that fails is reported on stderr and the others are still solved.

    With --points A B (no INPUT) the problem is the matching of two point sets.
    """
    if point_specs or not input_specs or metric is not None or minkowski_p is not None:
        from .points import solve_point_sets

        return solve_point_sets(input_specs, point_specs, metric, minkowski_p, solver, maximize, dtype, dataset, header,
                                index_col, output, report_path, json_stdout, duals_path, certify, cost_limit, device,
                                timeout, use_dask, scheduler, quiet)
    several = len(input_specs) > 1
    if cost_limit is not None and (duals_path is not None or maximize):  # said before any work, not after the solve
        raise InputError("--cost-limit applies to minimisation, as in lapjv; negate the costs instead" if maximize else
                         "--duals does not go with --cost-limit: the augmented problem's duals are not the caller's")
    if output == "-" and json_stdout:
        raise InputError("-o - and --json both write to stdout; send one of them to a file")
    if several:
        one_file = [flag for flag, value in (("-o", output), ("--report", report_path), ("--duals", duals_path))
                    if value is not None]
        if one_file:
            raise InputError(f"{', '.join(one_file)} with {len(input_specs)} inputs: run one input per output file "
                             "(--json prints one report line per input)")
        if input_specs.count("-") > 1:
            raise InputError("stdin ('-') is named more than once; it can be read only once")
    if output is not None:
        run_library_call(check_output_path, output, ASSIGNMENT_SUFFIXES, "assignment")
    if report_path is not None:
        run_library_call(check_output_path, report_path, (".json",), "report")
    if duals_path is not None:
        run_library_call(check_output_path, duals_path, DUALS_SUFFIXES, "duals")
    check_distinct_outputs(("-o", output), ("--report", report_path), ("--duals", duals_path), inputs=input_specs,
                           json_stdout=json_stdout)
    from ..options import check_device, check_solver_runs_here, check_timeout

    on_dask_here = use_dask or scheduler is not None or (several and device is None and on_dask.dask_by_default())
    if on_dask_here:  # before the device is checked: with Dask it is refused whatever it names
        for flag, value in (("-o", output), ("--duals", duals_path), ("--device", device)):
            if value is not None:
                raise InputError(f"{flag} does not go with Dask (--dask, --scheduler, or several GPUs): "
                                 "each worker solves on its own device and prints its report")
    run_library_call(check_device, device)
    run_library_call(check_timeout, timeout, solver)  # a named engine without a clock: before any input is read
    if not on_dask_here:  # a Dask worker runs it on its own machine
        run_library_call(check_solver_runs_here, solver)
    read_options = dict(dataset=dataset, **text_read_options(input_specs, header, index_col))
    for spec in input_specs:  # cheap: file checks, NPY headers, HDF5 shapes, text headers; no matrix is loaded
        rank = run_library_call(input_rank, spec, **read_options, text_head=several)
        check_rank_options(spec, rank, solver, duals_path, cost_limit)
    console = stderr_console(quiet)
    if on_dask_here:
        from ..scale import solve_inputs

        on_dask.solve_on_dask(solve_inputs, input_specs, read_options, dict(solver=solver, maximize=maximize, dtype=dtype,
                      timeout=timeout, cost_limit=cost_limit, certify=True if certify else None), scheduler, several,
                      console, report_path, json_stdout)
        return
    outputs = Outputs()
    for spec in input_specs:
        cost, source = run_library_call(read_matrix_with_info, spec, **read_options)
        rank = 3 if isinstance(cost, list) else cost.ndim  # a list: matrices of an NPZ or an HDF5 group
        check_rank_options(spec, rank, solver, duals_path, cost_limit)  # stdin: known only now
        announce_input(spec, source.notes, several, console)
        options = dict(solver=solver, maximize=maximize, dtype=dtype, timeout=timeout, device=device,
                       certify=True if certify else None)
        try:
            report = (solve_stack(cost, options, output, outputs) if rank == 3
                      else solve_matrix(cost, options, cost_limit, output, duals_path, outputs, one_solve=not several))
        except click.ClickException as error:  # which of several inputs, where its words do not say (NaN: scipy's)
            if several and not isinstance(error.__context__, SolverUnavailable):
                error.message = named_by_input(spec, error.message)
            raise
        emit_report(spec, report, source.notes, several, report_path, json_stdout, outputs, console)


def solve_matrix(cost, options, cost_limit, output, duals_path, outputs, one_solve=False):
    """One 2-D problem: solve (``one_solve``: the process's only one, lapcli.engines.auto.one_solve),
    write the assignment and duals; the report."""
    from ..pipeline import solve

    certify = True if duals_path is not None else options.get("certify")  # --duals: recover them if need be
    with auto.one_solve(one_solve):
        solution = run_library_call(solve, cost, cost_limit=cost_limit, **{**options, "certify": certify})
    write_solution(solution, output, duals_path, outputs)
    return solution.report


def solve_stack(cost, options, output, outputs):
    """A (B, n, m) stack, or matrices of several shapes, through solve_batch: col_ind written; the report."""
    from ..pipeline import solve_batch

    if output is not None and isinstance(cost, list):  # refused before the solve, not after it
        run_library_call(check_stack_output, output, len({matrix.shape for matrix in cost}) > 1)
    solution = run_library_call(solve_batch, cost, **options)
    if output is not None:
        names = cost.names if isinstance(cost, Batch) else None  # an NPZ's or a group's: answers go under them
        outputs.add(output, run_library_call(stack_assignment_bytes, output, solution.col_ind, names))
    return solution.report


# ----------------------------------------------------------------------------- info
@cli.command("info")
@click.option("--json", "json_stdout", is_flag=True, help="Print the same as JSON on stdout.")
def info_command(json_stdout):
    """List the engines, whether each can run here (and why not), the devices and versions."""
    from ..info import collect, render

    facts = collect()
    if json_stdout:
        run_library_call(write_bytes, "-", (json.dumps(facts, indent=2) + "\n").encode())
    else:
        with reporting_write_errors("stdout"):  # the table for people, on stdout
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
    if sys.stdout is None:  # descriptor 1 closed before we started: writing there is a broken pipe
        sys.stdout = ClosedStdout()
    if sys.stdin is None:
        sys.stdin = ClosedStdin()
    sys.stderr = MessagesStderr(sys.stderr)  # descriptor 2 closed or unwritable: messages are dropped
    try:
        code = cli.main(args=argv, prog_name="lap", standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt, Interrupted):
        click.echo("lap: interrupted", err=True)
        sys.exit(130)
    except Terminated:
        click.echo("lap: terminated", err=True)
        sys.exit(128 + signal.SIGTERM)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except LapOutputError as error:  # a write outside run_library_call: one line too
        FailedError(str(error)).show()
        sys.exit(FailedError.exit_code)
    except BrokenPipeError:  # the reader of our stdout went away (e.g. `| head`)
        sys.exit(1)
    except OSError as error:  # Click's own --help and --version text, on a full disk: one line too
        if error.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
            raise
        FailedError(f"cannot write stdout: {error.strerror}").show()
        sys.exit(FailedError.exit_code)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    sys.exit(code if isinstance(code, int) else 0)
