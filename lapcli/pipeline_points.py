"""``solve_points``: two point sets through the one pipeline (lapcli.pipeline), the costs computed
from the coordinates by an engine that can (cuda-sap), else the cdist matrix solved like any
matrix."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .arrays import host
from .cuda.probe import device_context
from .engines import registry
from .errors import LapInputError, SolverError
from .input_device import on_the_inputs_gpu
from .options import check_certify, check_device, check_maximize, check_timeout
from .pipeline import empty_duals, loaded_engine, matrix_report, set_up_apart, solve_ms, solve_problem
from .problem import array_module, prepare
from .results import Solution


@on_the_inputs_gpu("a", "b")
def solve_points(a: Any, b: Any, metric: str = "sqeuclidean", *, p: float | None = None,
                 maximize: bool = False, solver: str = "auto", timeout: float | None = None,
                 device: int | None = None, certify: bool | None = None,
                 names: tuple[str, str] = ("a", "b"), progress=None) -> Solution:
    """Match two point sets: the cost of pairing a[i] with b[j] is ``metric``'s distance between
    them, as scipy.spatial.distance.cdist(a, b, metric) defines it.

    Parameters
    ----------
    a, b : array_like, CuPy array or torch tensor, shapes (n, d) and (m, d)
        Coordinates, one row per point, d from 1 to 32; float32 and float64 (others are widened),
        finite. n ≠ m works: the smaller set is matched whole.
    metric : {"sqeuclidean", "euclidean", "cityblock", "chebyshev", "minkowski", "cosine"}
    p : float, optional
        minkowski's exponent (> 0, as cdist's; default 2).
    solver : str
        ``"auto"``, an engine that computes the costs from the coordinates (``cuda-sap``: the
        matrix is never stored, memory O((n + m)·d)), or any matrix engine, which solves the cdist
        matrix. ``auto`` (where thread-block clusters exist: Hopper) solves a minimised square of
        2049 to 4,096 points as its matrix built on the GPU, computes the costs on the GPU where
        read above 2048 points a side otherwise, and solves the matrix below.
    maximize, timeout, device, certify
        As for :func:`solve`.
    names : (str, str)
        What error messages call the two sets (``lap solve --points`` gives the file names).
    progress : callable, optional
        ``progress(phase, phases_left)`` after each round of the auction that solves a square
        problem on the GPU, with its phase so far (lapcli.cuda.auction.Phase: its ε, rounds, rows
        released, bids, ms, rows without a column in ``left_free``; ``ended`` False), and when
        that phase ends (``ended`` True).

    Returns
    -------
    Solution
        As :func:`solve`'s: ``row_ind``, ``col_ind``, ``objective`` (Σ of the pairs' distances,
        fsum), ``duals`` and ``report`` (``details["costs"]`` says how the costs were obtained).
        The objective equals ``solve(cdist(a, b, metric))``'s; tied pairs may differ.
    """
    from . import points as point_sets
    from . import points_frame as point_frames
    from .engines.auto import points_route

    start = time.perf_counter()
    check_device(device)
    timeout, certify = check_timeout(timeout), check_certify(certify)
    maximize = check_maximize(maximize, problems=False)
    if solver != "auto":
        registry.get(solver)  # an unknown name said as it is, before any easier sets are made of these
    problem = point_sets.prepare_points(a, b, metric, p=p, maximize=maximize, names=names)
    # cityblock sets apart in some coordinates solved without them, a maximised sqeuclidean square as
    # a minimised one (lapcli.points_frame): the same optimal assignments from an easier problem
    easier = point_frames.separated(problem) or point_frames.mirrored(problem)
    if easier is not None:
        sets = easier.easier  # (minkowski with p = 1 is cityblock by now: its metric, not the caller's name)
        try:
            solution = solve_points(sets.a, sets.b, sets.metric, maximize=sets.maximize, solver=solver,
                                    timeout=timeout, device=device, certify=certify, names=names, progress=progress)
        except LapInputError as refusal:  # a requested solver's, of the easier sets: say how they came
            raise type(refusal)(f"{refusal} ({easier.describe()})") from None
        return _mapped_back(solution, problem, easier, start, timeout, device, certify)
    with device_context(device):  # the route asks the named device for its memory and capability
        name, reason, device_matrix = points_route(problem, solver)
    if problem.is_empty:
        empty = np.empty(0, dtype=np.int64)
        report = matrix_report(problem, name, reason, start, 0, "none", "float64", None)
        duals = empty_duals(problem.xp, problem.n_rows, problem.n_cols)
        return Solution(row_ind=empty, col_ind=empty, objective=0.0, report=report, duals=duals)
    engine = registry.get(name) if name != "auto" else None
    matrix = None
    from_host = device_matrix and problem.xp is np
    # a matrix of sqeuclidean squares is the frame's (lapcli.points_frame): the same optimal assignments,
    # and the matrix engines solve sets placed apart as fast as sets in place (docs/points.md)
    frame = point_frames.onto_rows(problem) if engine is None or not engine.capabilities.points else None
    sets = frame.moved if frame else problem
    if from_host:  # host coordinates, their matrix built on the GPU
        matrix = _device_matrix(sets, device)
        if matrix is None:  # the room went to another allocation meanwhile: the costs from the coordinates
            name, reason = "cuda-sap", f"{reason}, but the GPU had no room for it: costs from the coordinates"
            engine, frame = registry.get(name), None
    if engine is None or not engine.capabilities.points:
        if matrix is None:
            matrix = _host_matrix(sets)
        on_gpu = not isinstance(matrix, np.ndarray)
        solution = solve_problem(prepare(matrix, maximize=maximize, check=False), solver=name, timeout=timeout,
                                 device=device, start=start, certify=certify)
        if frame is not None:
            matrix = None  # freed before the true costs' matrix is built
            # the true costs' matrix built and read where the moved one's certificate ran: a host
            # matrix solved on the GPU is certified there too, not in a second host pass
            solved_on_gpu = on_gpu or solution.report.certificate.get("where") == "device"
            _in_true_costs(solution, problem, frame, solved_on_gpu, device, (start, timeout, certify))
            solution.report.total_ms = solve_ms(start, solution.report.details)  # the true costs' pass too
        if problem.xp is np:  # the caller's host arrays get host answers
            solution.row_ind, solution.col_ind = host(solution.row_ind), host(solution.col_ind)
            if solution.duals is not None:
                solution.duals = (host(solution.duals[0]), host(solution.duals[1]))
        where = " built on the GPU" if on_gpu else ""
        size = f"{problem.n_rows} × {problem.n_cols}"
        solution.report.details["costs"] = f"{problem.metric_text} as a {size} cdist matrix{where}"
        if name == "auto":
            solution.report.reason = f"{reason}; {solution.report.reason}"
        return solution
    module, import_ms = loaded_engine(engine)
    result = module.run_points(problem, timeout=timeout, device=device, progress=progress, certify=certify)
    objective = problem.objective(result.rows, result.cols)
    set_up_apart(result.details, import_ms)
    report = matrix_report(problem, name, reason, start, objective, result.device, result.dtype, result)
    return Solution(row_ind=result.rows, col_ind=result.cols, objective=objective, report=report, duals=result.duals)


def _in_true_costs(solution: Solution, problem, frame, on_gpu: bool, device, limit: tuple) -> None:
    """``solution``, of the cdist matrix of ``frame``'s moved sets (lapcli.points_frame.Frame), made
    the original problem's: its objective from the true costs, and, where it was certified, its
    column duals mapped back (the row duals from the assigned pairs) and certified on the true
    matrix (built on the GPU where ``on_gpu``, else on the host), to the problem's tolerance or the
    frame's in true units (r times the moved certificate's), whichever is larger. ``limit``: (start,
    timeout, certify): a pass that would begin past the time limit is not run, as :func:`_mapped_back`
    has it (the answer without duals, or a SolverError where ``certify`` is True)."""
    from .certificate import certify, not_certified
    from .points_certificate import check_time_left, unchecked_past_the_limit

    report = solution.report
    rows, cols = host(solution.row_ind), host(solution.col_ind)
    solution.objective = report.objective = problem.objective(rows, cols)
    report.details["frame"] = frame.describe()
    if solution.duals is None:
        return
    start, timeout, certify_asked = limit
    try:
        check_time_left(timeout, start, 0, problem.n_rows)
    except SolverError as stopped:
        why = unchecked_past_the_limit(stopped, certify_asked, "not checked on the true costs")
        solution.duals, report.certified, report.certificate = None, False, not_certified(why)
        return
    with device_context(device if on_gpu else None):  # every array of the pass on one device
        cost = problem.dense(on_device=on_gpu)
        xp = array_module(cost)
        columns, moved_columns = (xp.asarray(sets.b) for sets in (problem, frame.moved))
        v = frame.column_duals(xp.asarray(solution.duals[1], dtype=xp.float64), columns, moved_columns)
        col_of_row = xp.empty(problem.n_rows, dtype=xp.int64)
        col_of_row[xp.asarray(rows)] = xp.asarray(cols)  # (a square: every row holds a column)
        u = cost[xp.arange(problem.n_rows), col_of_row] - v[col_of_row]
        tolerance = max(problem.tolerance(), frame.ratio * float(report.certificate["tolerance"]))
        certificate = certify(cost, col_of_row, u, v, tolerance, report.solver).to_dict()
    if "duals_recovered_ms" in report.certificate:
        certificate["duals_recovered_ms"] = report.certificate["duals_recovered_ms"]
    solution.duals, report.certificate = (u, v), certificate


def _mapped_back(solution: Solution, problem, easier, start: float, timeout, device, certify) -> Solution:
    """``solution``, of the square ``easier.easier`` problem that lapcli.points_frame made of
    ``problem`` (a Mirror's minimised sets, a Separation's reduced ones), made the original's: its
    objective from the true costs, ``details[easier.key]`` saying how (a frame the easier solve used
    named as the easier sets'), and, where it was certified, its duals mapped
    (``easier.duals``) and certified on the true costs (lapcli.points_certificate), to the
    problem's tolerance or the easier one's certificate's, whichever is larger (else no duals).
    That pass counts against ``timeout``: past it, the answer without duals, its report saying why
    (a SolverError where ``certify`` is True). An engine without a time limit (scipy) may have
    spent it all: the answer it found is not thrown away for a check."""
    from .certificate import not_certified
    from .points_certificate import certify_points, unchecked_past_the_limit

    report = solution.report
    rows, cols = host(solution.row_ind), host(solution.col_ind)
    report.maximize = problem.maximize
    solution.objective = report.objective = problem.objective(rows, cols)
    if "frame" in report.details:  # the easier problem's
        report.details["frame"] = f"{easier.whose}: {report.details['frame']}"
    report.details[easier.key] = easier.describe()
    report.reason = f"{report.details[easier.key]}; {report.reason}"  # the route the easier problem took, after why
    if solution.duals is None or not report.certified:
        solution.duals = None  # only proved duals leave, and the easier problem's are not the original's
    else:
        u, v = easier.duals(*solution.duals)
        col_of_row = np.empty(problem.n_rows, dtype=np.int64)
        col_of_row[rows] = cols  # (a square: every row holds a column)
        tolerance = max(problem.tolerance(), float(report.certificate["tolerance"]))
        try:  # the work minimises sign·c: its duals are sign·u, sign·v
            certificate = certify_points(problem, col_of_row, problem.sign * u, problem.sign * v, tolerance,
                                         report.solver, timeout=timeout, began=start, device=device,
                                         details=report.details).to_dict()
        except SolverError as stopped:
            why = unchecked_past_the_limit(stopped, certify, "not checked on the true costs")
            certificate, solution.duals, report.certified = not_certified(why), None, False
        else:
            if "duals_recovered_ms" in report.certificate:
                certificate["duals_recovered_ms"] = report.certificate["duals_recovered_ms"]
            xp = array_module(solution.row_ind)  # the duals where the route left the assignment
            solution.duals = (xp.asarray(u), xp.asarray(v))
        report.certificate = certificate
    report.total_ms = solve_ms(start, report.details)
    return solution


def _host_matrix(sets):
    """The sets' cdist matrix where their coordinates are, or a MemoryError saying what it needed."""
    try:
        return sets.dense()
    except MemoryError:
        gigabytes = sets.n_rows * sets.n_cols * 8 / 1e9
        instead = ("solver='sorted' matches these 1-D sets without it" if sets.along_a_line else
                   "costs are computed from the coordinates alone on a GPU (engine cuda-sap)")
        raise MemoryError(f"the {sets.n_rows:,} × {sets.n_cols:,} cdist matrix of the two sets needs {gigabytes:.3g} "
                          f"GB; {instead}") from None


def _device_matrix(problem, device):
    """The problem's cdist matrix built on ``device`` (default: the current GPU), or None where it
    does not fit there."""
    import cupy

    try:
        with device_context(device):
            return problem.dense(on_device=True)
    except cupy.cuda.memory.OutOfMemoryError:
        return None
