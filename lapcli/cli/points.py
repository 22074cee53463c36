"""``lap solve --points A B`` and ``lap generate --points``: the command line of point-set matching
(lapcli.points, lapcli.pipeline_points.solve_points). Reads, checks and writes as ``lap solve`` does for
a matrix; the library does the work."""

from __future__ import annotations

import sys
from contextlib import contextmanager

from ..generate import new_seed
from ..io.formats import ASSIGNMENT_SUFFIXES, DUALS_SUFFIXES, split_hdf5_path
from ..io.read import input_rank, read_matrix_with_info, text_read_options
from ..io.targets import check_output_path, check_room
from ..io.write import write_matrix_blocks
from .support import (
    InputError,
    Outputs,
    announce_input,
    check_distinct_outputs,
    emit_report,
    run_library_call,
    stderr_console,
    write_solution,
)


def solve_point_sets(input_specs, point_specs, metric, minkowski_p, solver, maximize, dtype, dataset, header,
                     index_col, output, report_path, json_stdout, duals_path, certify, cost_limit, device, timeout,
                     use_dask, scheduler, quiet) -> None:
    """``lap solve --points A B``: the options checked, both sets read, matched and written as
    for a matrix. Also says what is missing when neither INPUT nor --points was given."""

    if not point_specs:
        if not input_specs:
            raise InputError("missing INPUT (a matrix file, or - for stdin), or --points A B")
        raise InputError(f"{'--metric' if metric is not None else '--p'} goes with --points A B")
    option = next((spec for spec in point_specs if spec.startswith("-") and spec != "-"), None)
    if option is not None:  # click gave the option after --points A as its second file
        raise InputError(f"--points takes two files, A B, before other options; it was given {option} as a file")
    if input_specs:
        raise InputError("give INPUT matrices or --points A B, not both")
    for flag, value in (("--dtype", dtype), ("--cost-limit", cost_limit), ("--scheduler", scheduler),
                        ("--dask", use_dask or None)):
        if value is not None:
            raise InputError(f"{flag} does not go with --points")
    metric = metric or "sqeuclidean"
    from ..options import check_device, check_solver_runs_here
    from ..pipeline_points import solve_points
    from ..points import check_metric

    run_library_call(check_metric, metric, minkowski_p)  # before any file is read

    for path, suffixes, what in ((output, ASSIGNMENT_SUFFIXES, "assignment"), (report_path, (".json",), "report"),
                                 (duals_path, DUALS_SUFFIXES, "duals")):
        if path is not None:
            run_library_call(check_output_path, path, suffixes, what)
    if output == "-" and json_stdout:
        raise InputError("-o - and --json both write to stdout; send one of them to a file")
    check_distinct_outputs(("-o", output), ("--report", report_path), ("--duals", duals_path), inputs=point_specs,
                           json_stdout=json_stdout)
    if point_specs.count("-") > 1:
        raise InputError("stdin ('-') is named more than once; it can be read only once")
    run_library_call(check_device, device)
    run_library_call(check_solver_runs_here, solver)
    read_options = dict(dataset=dataset, **text_read_options(point_specs, header, index_col))
    for spec in point_specs:  # cheap checks of both before either is read
        rank = run_library_call(input_rank, spec, **read_options, text_head=True, coordinates=True)
        if rank is not None and rank != 2:  # 3 from an NPZ or HDF5 file: a 3-D array or several 2-D ones
            named = dataset is not None or split_hdf5_path(spec)[1] is not None
            what, hint = (f"is {rank}-D", "") if rank != 3 or spec.lower().endswith(".npy") else (
                "names a 3-D array or a group of arrays (a batch)", "") if named else (
                "is read as a batch (a 3-D array, several arrays, or one named '0' as a batch's members are)",
                "; name one array (FILE.npz:NAME, FILE.h5:/path/to/it)")
            raise InputError(f"{spec} {what}: a point set is one 2-D array, one point a row{hint}")
    sets, notes = [], []
    for spec in point_specs:
        coordinates, source = run_library_call(read_matrix_with_info, spec, **read_options, coordinates=True)
        if isinstance(coordinates, list):
            raise InputError(f"{spec} holds several arrays: a point set is one 2-D array")
        sets.append(coordinates)
        notes.extend(source.notes)
    console = stderr_console(quiet)
    announce_input(" ".join(point_specs), notes, False, console)
    certify = True if certify or duals_path is not None else None  # --duals: recover them if need be
    with phase_progress(console, quiet, min(len(sets[0]), len(sets[1]))) as progress:
        solution = run_library_call(solve_points, sets[0], sets[1], metric, p=minkowski_p, maximize=maximize,
                                    solver=solver, timeout=timeout, device=device, certify=certify,
                                    names=tuple(point_specs), progress=progress)
    outputs = Outputs()
    write_solution(solution, output, duals_path, outputs)
    emit_report(" ".join(point_specs), solution.report, notes, False, report_path, json_stdout, outputs, console)




@contextmanager
def phase_progress(console, quiet: bool, rows: int):
    """A transient Rich line on stderr that follows the auction of ``rows`` rows round by round: its
    ε phase and the rows holding a column (a long solve shows how far it is; Ctrl-C between rounds
    ends it, exit 130): yields the progress callback of solve_points, or None."""
    if quiet or not console.is_terminal:
        yield None
        return
    from rich.progress import Progress

    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("matching", total=None)
        done = [0]

        def follow(phase, phases_left: int) -> None:
            done[0] += phase.ended
            number = done[0] + (not phase.ended)  # the phase this snapshot is of
            bar.update(task, total=number + phases_left, completed=done[0],
                       description=f"auction: phase {number} of {number + phases_left}, ε {phase.eps:.2g}, round "
                                   f"{phase.rounds}: {rows - phase.left_free:,} of {rows:,} rows hold a column, "
                                   f"{phase.bids:,} bids")

        yield follow


def generate_point_set(console, n, m, batch, dim, kind, seed, dtype, output, dataset) -> None:
    """``lap generate --points``: one (n, d) point set."""
    from ..generate import generate_points

    for flag, value, why in (("--m", m, "a second set is another run with another --seed"),
                             ("--batch", batch, "one set a file")):
        if value is not None:
            raise InputError(f"{flag} does not go with --points ({why})")
    if output in (None, "-") and sys.stdout.isatty():
        raise InputError("stdout is a terminal; give -o FILE (.npy, .csv, .h5)")
    if output not in (None, "-"):
        run_library_call(check_output_path, output, (".npy", ".csv", ".h5", ".hdf5"), "point set")
        run_library_call(check_room, output, n * dim, dtype or "float64")
    drawn = seed is None
    seed = new_seed() if drawn else seed
    coordinates = run_library_call(generate_points, n, dim, kind=kind, seed=seed, dtype=dtype or "float64")
    run_library_call(write_matrix_blocks, output or "-", coordinates.shape, coordinates.dtype.name,
                     iter([coordinates]), dataset)
    if output not in (None, "-"):
        from rich.markup import escape  # a path may hold "[...]": printed as it is

        console.print(f"wrote {escape(output)} ({n} {kind} points × {dim} {coordinates.dtype}, seed {seed})")
    elif drawn:  # to stdout: the seed that reproduces it, as a matrix's
        console.print(f"seed {seed}")
