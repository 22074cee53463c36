"""The one pipeline every entry point takes: prepare → choose → engine → certify → map back.

``solve`` (one matrix) and ``solve_batch`` (a stack, or a list of matrices) differ only in the
result they return: both prepare a ``Problem`` (lapcli.problem; a matrix is a stack of one), let
``engines.auto.choose`` name the engine, run it (the engines build their work stack with
lapcli.work and prove their answers with lapcli.certificate), and map the answer back to the
caller's rows, columns, sign, library and device. ``cost_limit`` is a transform around it
(lapcli.cost_limit). Preparing is O(1) for contiguous input: a small batch's whole call on the GPU
is ~0.2 ms, so nothing here scans the costs that an engine will read anyway.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import Any

import numpy as np

from . import __version__, ragged
from .certificate import NO_PAIRS, for_rounded_costs, not_certified
from .cost_cap import CapRetry, solved_capped
from .cost_limit import CostLimit
from .duals import certified_duals, certified_members, certified_stack, default_budget
from .engines import registry
from .engines.auto import choose, choose_ragged
from .engines.base import PendingBatch
from .errors import LapInputError, TooWideError
from .input_device import on_the_inputs_gpu
from .options import check_certify, check_device, check_maximize, check_timeout
from .problem import Problem, prepare
from .ragged_integers import as_integers, holds_dtype, range_refusal
from .arrays import member_ndim, padded, split_flat, stacked
from .results import BatchSolution, MembersAnswer, Solution, SolveReport
from .work_dtypes import requested_dtype


@on_the_inputs_gpu("cost")
def solve(cost: Any, *, solver: str = "auto", maximize: bool = False, dtype: str | None = None,
          timeout: float | None = None, device: int | None = None, cost_limit: float | None = None,
          certify: bool | None = None) -> Solution:
    """Solve the linear assignment problem for ``cost`` and report how.

    Parameters
    ----------
    cost : array_like or cupy.ndarray, shape (n, m)
        Costs; ``+inf`` marks a forbidden pair (``-inf`` when ``maximize``). A torch tensor is read
        as its values (detached; bfloat16 and float8 as float32, which holds them exactly): a CPU
        one as NumPy, a CUDA one as CuPy on its memory.
    solver : str
        ``"auto"`` or an engine of ``lap info`` (``cuda``, ``cuda-sap``, ``cuda-stepwise``,
        ``numpy``, ``scipy``, ``lapx``); ``cuda-stepwise`` is the benchmark baseline.
    maximize : bool
        Maximise the total instead of minimising it.
    dtype : {"int32", "int64", "float32", "float64"}, optional
        Working dtype of the engines (default: int32 for integers that fit, float32 for float16 and
        float32 input, float64 otherwise).
    timeout : float, optional
        Seconds after which a CUDA engine gives up (SolverError).
    device : int, optional
        CUDA device to run on; a device input's own GPU (another is refused), else CuPy's current one.
    cost_limit : float, optional
        As lapjv's ``cost_limit``: a row whose assignment would cost more than this stays
        unassigned (−1 in ``x``). Solved exactly as lapjv does, on the (n+m)² augmented problem;
        ``inf`` (lapjv's default) leaves no row out.
    certify : bool, optional
        Engines without duals (scipy, lapx) have theirs recovered from the assignment and checked
        by the certificate, as every engine's are (lapcli.duals). By default within a budget of
        about their solve on squares of a few hundred and up (more on small or rectangular ones:
        docs/dispatch.md); ``True`` always, ``False`` never. Engines with duals always certify.

    Returns
    -------
    Solution
        ``row_ind``, ``col_ind`` (as scipy), ``x``/``y`` (as lapjv), ``objective`` (exact for
        integers), ``duals`` and ``report`` (with ``certified``).

    Raises
    ------
    ValueError
        Bad input (scipy's messages), or "cost matrix is infeasible" (InfeasibleError).
    SolverUnavailable, SolverError
        The engine cannot run here, or stopped (guard, timeout, device memory, failed certificate).
    """
    start = time.perf_counter()
    check_device(device)
    timeout, certify, maximize = check_timeout(timeout), check_certify(certify), check_maximize(maximize, problems=False)
    limit = CostLimit.of(cost, cost_limit, maximize, dtype) if cost_limit is not None else None
    problem = prepare(limit.matrix if limit else cost, maximize=maximize, dtype=dtype, check=False)
    try:
        solution = solve_problem(problem, solver=solver, timeout=timeout, device=device, start=start, certify=certify)
    except LapInputError as error:  # the augmented problem's refusal, in the caller's terms
        raise (limit.explain(error) if limit else error) from None
    return limit.solution(solution) if limit else solution


def solve_problem(problem: Problem, *, solver: str = "auto", timeout: float | None = None,
                  device: int | None = None, start: float | None = None, certify: bool | None = None) -> Solution:
    """``solve`` from a prepared matrix problem (``linear_sum_assignment`` prepares only once)."""
    start = time.perf_counter() if start is None else start
    name, reason = choose(problem, solver)
    engine = registry.get(name)
    if not engine.capabilities.checks_entries:
        problem.has_forbidden  # noqa: B018 - entries and feasibility where the input lives
    if problem.is_empty:
        empty = np.empty(0, dtype=np.int64)
        zero = problem.objective(empty, empty)  # 0, or 0.0 for float costs, as scipy's sum of none
        integers, asked = problem.original.dtype.kind in "biu", problem.requested_dtype  # nothing is cast
        report = matrix_report(problem, name, reason, start, zero, "none", asked or problem.original.dtype.name, None)
        duals = empty_duals(problem.xp, problem.n_rows, problem.n_cols, np.int64 if integers else np.float64)
        return Solution(row_ind=empty, col_ind=empty, objective=zero, report=report, duals=duals)
    module, import_ms = loaded_engine(engine)
    try:
        result = module.run(problem, timeout=timeout, device=device)
    except CapRetry as retry:  # large costs no optimum takes inflated its tolerance: once more, capped
        result = solved_capped(problem, module.run, retry, timeout, start, device)
    if result.certificate is None and certify is not False and len(result.rows):
        budget = None if certify else default_budget(name)  # by default: passes of about a square's solve
        result.duals, result.certificate = certified_duals(problem, result.rows, result.cols, name, budget)
    objective = problem.objective(result.rows, result.cols)
    set_up_apart(result.details, import_ms, problem)
    report = matrix_report(problem, name, reason, start, objective, result.device, result.dtype, result)
    report.notes = [*report.notes, *timeout_notes(name, timeout)]
    return Solution(row_ind=result.rows, col_ind=result.cols, objective=objective, report=report,
                    duals=result.duals)


def timeout_notes(name: str, timeout: float | None) -> list[str]:
    """A report's note where a time limit went to an engine that cannot stop mid-solve (scipy, lapx,
    numpy, scipy-batch: no clock inside); the CLI refuses --timeout with one (options.check_timeout)."""
    stops = timeout is None or registry.get(name).capabilities.timeout
    return [] if stops else [f"timeout not applied to the solve: {name} cannot stop mid-solve, and ran to its end"]


def empty_duals(xp, n_rows: int, n_cols: int, dtype=np.float64) -> tuple:
    """(u, v) of a problem with no pair, zeros (int64 for integer costs): ``--duals`` writes them as any."""
    return xp.zeros(n_rows, dtype), xp.zeros(n_cols, dtype)


def loaded_engine(engine):
    """(the engine's module, ms its first import took: 0 once it is loaded)."""
    begin = time.perf_counter()
    return engine.load(), (time.perf_counter() - begin) * 1e3  # (the load first, then the clock)


def set_up_apart(details: dict, import_ms: float, problem: Problem | None = None) -> None:
    """Record a first use's one-off imports (scipy's alone is ~0.5 s) in ``details["import_ms"]``, added to any
    there and to ``problem``'s checks': with ``compile_ms`` they stay out of ``total_ms`` and the throughput."""
    import_ms += (details.get("import_ms") or 0.0) + (problem.set_up.get("import_ms", 0.0) if problem else 0.0)
    if import_ms >= 1.0:
        details["import_ms"] = round(import_ms, 3)


def solve_ms(start: float, details: dict) -> float:
    """Milliseconds since ``start``, less a first use's one-off set-up (imports, kernel compiles)."""
    set_up = (details.get("import_ms") or 0.0) + (details.get("compile_ms") or 0.0)
    return max((time.perf_counter() - start) * 1e3 - set_up, 0.0)


def matrix_report(problem, name, reason, start, objective, device, dtype_name, result) -> SolveReport:
    if result is None:
        certificate = not_certified("empty problem: nothing to prove")
    elif isinstance(result.certificate, dict):
        certificate = result.certificate
    elif isinstance(result.certificate, str):  # why the duals were not recovered
        certificate = not_certified(result.certificate)
    else:
        certificate = not_certified(f"engine {name} gives no duals")
    return SolveReport(
        objective=objective, n_rows=problem.n_rows, n_cols=problem.n_cols, maximize=problem.maximize, solver=name,
        device=device, dtype=dtype_name, total_ms=solve_ms(start, result.details if result else {}),
        steps=result.steps if result else [], version=__version__, reason=reason,
        details=result.details if result else {}, certified=bool(certificate.get("checked")),
        certificate=for_rounded_costs(certificate, problem.notes()), notes=problem.notes(),
    )


@on_the_inputs_gpu("costs")
def solve_batch(costs, *, solver: str = "auto", maximize: bool = False, dtype: str | None = None,
                timeout: float | None = None, device: int | None = None, sizes=None,
                certify: bool | None = None, objectives: bool = True) -> BatchSolution:
    """Solve every problem of a (B, n, m) stack (NumPy, CuPy or a torch tensor), or of a list of
    matrices of any shapes, in one call.

    Returns a BatchSolution: ``col_ind`` (B, n) (−1: unassigned row) in the caller's library and
    device, ``objectives`` (B,), and a ``report`` (engine, device, times, problems per second,
    certificate). Raises InfeasibleError naming the infeasible members; nothing is returned then.
    A list of matrices of different shapes is solved in one launch too (lapcli.ragged) and gives
    ``col_ind`` as a list of arrays. ``sizes`` = (rows, cols), B integers each: problem b is
    ``costs[b, :rows[b], :cols[b]]`` (entries outside it are not read); ``col_ind`` stays (B, n).
    ``certify``: engines without duals (scipy-batch) have theirs recovered per problem and checked,
    by default where that costs less than the solve (lapcli.duals.certified_stack); True always.
    ``objectives=False``: ``objectives`` is None and nothing is summed for it (batch_linear_assignment
    returns the columns only; on the CPU a ragged list of 1000 small problems spends a fifth of
    its time on the sums).
    """
    start = time.perf_counter()
    check_device(device)
    timeout, certify, maximize = check_timeout(timeout), check_certify(certify), check_maximize(maximize)
    dtype = requested_dtype(dtype)  # a name from here on: the ragged packing reads it before prepare
    options = dict(solver=solver, maximize=maximize, dtype=dtype, timeout=timeout, device=device, certify=certify,
                   objectives=objectives)
    if sizes is not None:
        return solve_members(ragged.from_padded(costs, sizes), start=start, **options)
    if isinstance(costs, (list, tuple)):
        if not costs or any(member_ndim(matrix, index) != 2 for index, matrix in enumerate(costs)):
            ragged.from_list(costs)  # named as a list's, not its stack's
        one_shape = _one_shape(costs)
        stack = stacked(costs) if one_shape else None
        if stack is None:  # shapes, or values with no exact common type: member by member
            members = ragged.from_list(costs)
            if one_shape:  # answered as their stack would be: one (B, n) array
                members = replace(members, padded_rows=int(members.rows[0]))
            return solve_members(members, start=start, **options)
        costs = stack
    problem = prepare(costs, maximize=maximize, dtype=dtype, check=False, stack=True)
    name, reason = choose(problem, solver)
    return _solve_stack(problem, name, reason, start, timeout, device, certify, objectives)


def _one_shape(matrices) -> bool:
    """Whether every matrix of a list has the first one's shape; stops at the first that does not."""
    shape = lambda c: c.shape if type(c) is np.ndarray else tuple(np.shape(c))  # noqa: E731
    first = shape(matrices[0])
    return all(shape(c) == first for c in matrices)


def _solve_stack(problem: Problem, name: str, reason: str, start: float, timeout, device,
                 certify: bool | None = None, objectives: bool = True) -> BatchSolution:
    if problem.is_empty:
        col_ind = problem.xp.full(problem.shape[:2], -1, dtype=np.int64)
        dtype_name = problem.requested_dtype or problem.original.dtype.name  # nothing is cast: the one asked for
        return _batch_solution(problem, name, reason, start, col_ind, "none", dtype_name, {},
                               not_certified(NO_PAIRS), [], summed=objectives)
    engine = registry.get(name)
    if not engine.capabilities.checks_entries:
        problem.has_forbidden  # noqa: B018 - entries and feasibility where the input lives
    module, import_ms = loaded_engine(engine)
    result, caller_col_ind = _finished(module.run_batch(problem, timeout=timeout, device=device), problem)
    if result.unchecked_nonfinite:  # the launch met NaN or an infinity: check them (bad input, or forbidden
        problem.has_forbidden  # noqa: B018 - pairs and their feasibility), then solve with the sentinels
        result, caller_col_ind = _finished(module.run_batch(problem, timeout=timeout, device=device), problem)
    set_up_apart(result.details, import_ms, problem)
    certificate = result.certificate
    if certificate is None and certify is not False:  # an engine without duals: recover them, as for a matrix
        certificate = certified_stack(problem, result.col_ind, name, default_budget(name), force=bool(certify))
    return _batch_solution(problem, name, reason, start, result.col_ind, result.device, result.dtype, result.details,
                           certificate, [*result.notes, *timeout_notes(name, timeout)], result.objectives,
                           caller_col_ind, summed=objectives)


def solve_members(members: ragged.Members, **options) -> BatchSolution:
    """A ragged batch (lapcli.ragged.Members) in one call (solve_members_raw). ``col_ind``: a list
    of arrays, one per member, or (B, n) for a padded stack with sizes."""
    listed = members.padded_rows is None
    answer = solve_members_raw(members, flat=listed, **options)
    col_ind = answer.col_ind
    if not listed:
        if members.padded_rows > col_ind.shape[1]:
            col_ind = _widen(col_ind, members.padded_rows)
        caller = members.origin.to_caller(col_ind)
    elif answer.columns is not None:  # host members' arrays: NumPy's are the caller's own
        origin = members.origin
        caller = answer.columns if origin.library == "numpy" else [origin.to_caller(c) for c in answer.columns]
    elif answer.flat is not None:
        caller = split_flat(members.origin.to_caller(answer.flat), members.rows)
    else:
        caller = members.origin.to_caller(col_ind)
        caller = [caller[b, :rows] for b, rows in enumerate(members.rows.tolist())]
    return BatchSolution(col_ind=caller, objectives=answer.objectives, report=answer.report)


def solve_members_raw(members: ragged.Members, *, solver: str = "auto", maximize: bool = False,
                      dtype: str | None = None, timeout: float | None = None, device: int | None = None,
                      start: float | None = None, certify: bool | None = None, objectives: bool = True,
                      pairs: bool = False, flat: bool = False) -> MembersAnswer:
    """A ragged batch's MembersAnswer: by the engine's ``run_members`` where it takes it
    (cuda-batch: in place, one launch; scipy-batch: member by member), else packed into one work
    stack (lapcli.ragged.pack). On the GPU every answer is certified; the CPU's member loop has its
    duals recovered and checked where that costs less than the solve (``certify``: True always,
    False never). ``objectives=False``: None, nothing summed. ``pairs``: each member's assigned rows
    in order and their columns, member after member, as one (2, Σ) int64 array (rows, then
    columns) on the batch's device (lapcli.match). ``flat``: the engine may give a list's columns
    as one array."""
    start = time.perf_counter() if start is None else start
    widest = int(max(members.rows.max(), members.cols.max(), 0)) if len(members) else 0
    name, reason = choose_ragged(len(members), widest, solver, members.packable)
    module, import_ms = loaded_engine(registry.get(name))
    packed = found_pairs = result = solved = None

    def members_by(engine_module):  # the engine's own way with a ragged batch, None where it declines
        return engine_module.run_members(members, maximize=maximize, objectives=objectives, pairs=pairs, flat=flat,
                                         timeout=timeout, dtype=dtype, device=device)

    if len(members) and hasattr(module, "run_members"):
        result = members_by(module)
        result = None if result is not None and result.unchecked_nonfinite else result  # packed, then checked
    if len(members) and result is None:
        try:
            packed, problem = _packed_for(members, name, maximize, dtype, device)
            solved = _solve_stack(problem, name, reason, start, timeout, device, certify, objectives)
        except TooWideError as refused:  # the stack cannot hold every member exactly: each alone, if auto
            if solver != "auto" or not holds_dtype(members, dtype) or name == "scipy-batch":
                raise
            name, reason = "scipy-batch", f"auto: {refused.fact}; scipy per problem, each in its own type"
            module, more_ms = loaded_engine(registry.get(name))
            import_ms += more_ms
            result = members_by(module)
            packed = None
        except LapInputError as refused:  # the packed stack's range holds its padding: told in the members'
            raise (range_refusal(members, maximize, dtype) if " lie in [" in str(refused) else refused) from None
    if not len(members):  # no problem: nothing to solve
        col_ind = members.xp.zeros((0, 0), dtype=np.int64)
        sums = np.zeros(0, np.int64 if np.dtype(members.dtype).kind in "biu" else np.float64) if objectives else None
        details, notes, device_name, dtype_name = {}, [], "none", dtype or np.dtype(members.dtype).name
        certificate = not_certified("no problem: nothing to prove")
    elif result is not None:
        col_ind, sums, found_pairs = result.col_ind, result.objectives, result.pairs
        details, notes, device_name, dtype_name = result.details, result.notes, result.device, result.dtype
        certificate = result.certificate
        if not (members.rows * members.cols).any():  # no pair anywhere, whatever the engine says
            certificate = not_certified(NO_PAIRS)
        if col_ind is None and ((certificate is None and certify is not False) or (pairs and found_pairs is None)):
            col_ind = padded(result.columns, members.rows)
        if certificate is None and certify is not False:  # an engine without duals
            certificate = certified_members(members, col_ind, maximize, name, default_budget(name), force=bool(certify))
    else:
        col_ind = ragged.unpack(packed, solved.col_ind, members)
        sums, report = solved.objectives, solved.report
        if sums is not None and members.packable and np.dtype(members.dtype).kind == "f":  # float costs solved as
            sums = sums.astype(np.float64)  # integers: float sums, as a stack's (exact, rounded once)
        details, notes, device_name, dtype_name = report.details, report.notes, report.device, report.dtype
        certificate = report.certificate if (members.rows * members.cols).any() else not_certified(NO_PAIRS)
        details["padded"] = f"{problem.shape[1]}×{problem.shape[2]}"
    if pairs and found_pairs is None:
        found_pairs = ragged.pairs(col_ind, packed, np.minimum(members.rows, members.cols))
    set_up_apart(details, import_ms)  # (added to a packed stack's own: its checks')
    notes = [*notes, *timeout_notes(name, timeout)] if result is not None else notes  # (packed: in its report)
    total_ms = solve_ms(start, details)
    batch = len(members)
    report = SolveReport(
        batch=batch, n_rows=-1, n_cols=-1, maximize=maximize, solver=name, device=device_name, dtype=dtype_name,
        total_ms=total_ms, problems_per_second=batch / (total_ms / 1e3) if total_ms else 0.0, version=__version__,
        reason=f"{reason}; {batch} problems of several shapes", details=details,
        certified=bool(certificate and certificate.get("checked")),
        certificate=certificate if certificate is not None else not_certified(f"engine {name} gives no duals"),
        notes=notes, objectives=sums,
    )
    return MembersAnswer(col_ind, sums, report, found_pairs, result.flat if result is not None else None,
                         result.columns if result is not None else None)


def _packed_for(members: ragged.Members, name: str, maximize: bool, dtype: str | None, device: int | None):
    """(packed, problem): the members packed into one work stack for engine ``name`` (as integers where
    ``dtype`` asks) and its prepared Problem; TooWideError if none holds all."""
    if dtype is not None and np.dtype(dtype).kind in "iu" and np.dtype(members.dtype).kind == "f":
        members = as_integers(members, dtype, maximize)
    upload = device is None and registry.get(name).capabilities.device == "cuda"  # host members: packed there
    packed = ragged.pack(members, maximize, upload)
    problem = prepare(packed.stack, maximize=maximize, dtype=dtype, check=False, stack=True)
    problem.maybe_infeasible = packed.own_forbidden
    return packed, problem


def _widen(col_ind, width: int):
    """(B, width) with −1 past ``col_ind``'s columns (rows past every member's own)."""
    xp = np if isinstance(col_ind, np.ndarray) else sys.modules["cupy"]
    wide = xp.full((col_ind.shape[0], width), -1, dtype=np.int64)
    wide[:, :col_ind.shape[1]] = col_ind
    return wide


def _finished(result, problem):
    """(BatchEngineResult, the caller's col_ind or None), a launch still running waited for."""
    if not isinstance(result, PendingBatch):
        return result, None
    caller_col_ind = problem.origin.to_caller(result.col_ind)  # (before the wait: it overlaps the launch)
    return result.finish(), caller_col_ind


def _batch_solution(problem, name, reason, start, col_ind, device, dtype, details, certificate, notes,
                    objectives=None, caller_col_ind=None, summed: bool = True) -> BatchSolution:
    if not summed:  # the caller asked for none
        objectives = None
    elif objectives is None:  # engines that do not sum the objectives themselves
        objectives = problem.objectives(col_ind)
    if caller_col_ind is None:
        caller_col_ind = problem.origin.to_caller(col_ind)
    batch, n, m = problem.shape
    total_ms = solve_ms(start, details)
    report = SolveReport(
        batch=batch, n_rows=n, n_cols=m, maximize=problem.maximize, solver=name, device=device, dtype=dtype,
        total_ms=total_ms, problems_per_second=batch / (total_ms / 1e3) if total_ms else 0.0, version=__version__,
        reason=reason, details=details, certified=bool(certificate and certificate.get("checked")),
        certificate=for_rounded_costs(certificate if certificate is not None else
                                      not_certified(f"engine {name} gives no duals"), [*problem.notes(), *notes]),
        notes=list(dict.fromkeys([*problem.notes(), *notes])), objectives=objectives,
    )
    return BatchSolution(col_ind=caller_col_ind, objectives=objectives, report=report)
