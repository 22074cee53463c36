"""Many assignment problems in one call: ``solve_batch`` and ``batch_linear_assignment``.

The batch is the leading axis, as in torch-linear-assignment: a (B, n, m) stack (NumPy, CuPy or
a torch tensor, CPU or CUDA) gives ``col_ind`` of shape (B, n), the column of each row, −1 for a
row left unassigned (n > m). Every rule of ``linear_sum_assignment`` holds per problem (dtypes,
maximize, ``+inf`` forbidden, scipy's messages); an infeasible member is named, and nothing
half-done is returned. Results stay where the input lives (NumPy → NumPy, CuPy → CuPy, torch →
torch on the same device). A list of 2-D matrices of different shapes is solved group by group.

The work stack a GPU batch engine solves is built like the single problem's (problem.py): tall
problems transposed (rows ≤ columns, no padding: the engine is rectangular), negated to maximise,
float rows reduced by their minimum so that the tolerance follows the spread, forbidden entries set
to a per-problem sentinel after a feasibility check.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from . import __version__
from .arrays import Origin, as_array, is_torch
from .cuda import probe
from .engines import registry
from .engines.base import EntriesNeedChecking
from .errors import InfeasibleError, LapInputError, LapTypeError
from .problem import WORK_DTYPES, _INT64_SAFE, invalid_entries


@dataclass
class BatchReport:
    """What one batch solve did (the JSON report of ``lap solve stack.npy``)."""

    batch: int
    n_rows: int
    n_cols: int
    maximize: bool
    solver: str
    device: str
    dtype: str
    total_ms: float
    problems_per_second: float
    version: str
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)  # h2d_ms, kernel_ms, d2h_ms, layout, …
    steps: list = field(default_factory=list)  # summed over the batch where the engine has steps
    certified: bool = False
    certificate: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    objectives: Any = field(default_factory=list)  # (B,) array, as a list in to_dict()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if isinstance(self.objectives, np.ndarray):
            data["objectives"] = self.objectives.tolist()  # Python ints stay exact
        return data


@dataclass
class BatchSolution:
    """``col_ind`` (B, n) in the caller's library and device, ``objectives`` (B,) exact for
    integer costs, and one ``report``."""

    col_ind: Any
    objectives: np.ndarray
    report: BatchReport


@dataclass
class BatchProblem:
    """A validated (B, n, m) stack and how to solve it."""

    original: Any  # NumPy or CuPy (B, n, m), never modified
    xp: Any
    origin: Origin
    maximize: bool
    forbidden: np.ndarray  # (B,) bool: problem b has forbidden entries (known once entries_checked)
    requested_dtype: str | None = None
    entries_checked: bool = True  # False: float entries not yet checked for NaN / infinities

    @property
    def shape(self) -> tuple[int, int, int]:
        shape = self.original.shape  # NumPy and CuPy give Python ints
        return shape[0], shape[1], shape[2]

    @property
    def transposed(self) -> bool:
        return self.shape[1] > self.shape[2]


def prepare_batch(costs, *, maximize=False, dtype=None, check_entries: bool = True) -> BatchProblem:
    """Validate the stack's shape and dtype; with ``check_entries``, also its entries (one pass:
    NaN and wrong-signed infinities refused, forbidden entries found per problem). Without it,
    the entries are left to an engine that finds non-finite values itself (``checks_entries``)."""
    if dtype is not None and dtype not in WORK_DTYPES:
        raise LapInputError(f"unknown working dtype {dtype!r}; choose one of {', '.join(WORK_DTYPES)}")
    arr, origin = as_array(costs)
    xp = np if isinstance(arr, np.ndarray) else __import__("cupy")
    if arr.ndim != 3:
        raise LapInputError(f"expected a stack of matrices (3-D array), got a {arr.ndim}-D array")
    if arr.dtype.kind not in "biuf":
        raise LapTypeError(f"Cannot cast array data from {arr.dtype!r} to dtype('float64') according to the rule 'safe'")
    problem = BatchProblem(arr, xp, origin, bool(maximize), np.zeros(arr.shape[0], dtype=bool), dtype,
                           entries_checked=arr.dtype.kind != "f")
    return with_checked_entries(problem) if check_entries else problem


def with_checked_entries(problem: BatchProblem) -> BatchProblem:
    """The problem with its float entries checked: InvalidEntries for NaN or an infinity of the
    wrong sign (scipy's message), ``forbidden[b]`` set where problem b holds an allowed one."""
    if problem.entries_checked:
        return problem
    arr, xp = problem.original, problem.xp
    forbidden = np.zeros(arr.shape[0], dtype=bool)
    if arr.size and not bool(xp.isfinite(arr).all()):
        if bool(xp.isnan(arr).any()):
            raise invalid_entries()
        wrong, allowed = (np.inf, -np.inf) if problem.maximize else (-np.inf, np.inf)
        if bool((arr == wrong).any()):
            raise invalid_entries()
        per_problem = (arr == allowed).any(axis=(1, 2))
        forbidden = np.asarray(per_problem if xp is np else xp.asnumpy(per_problem))
    return replace(problem, forbidden=forbidden, entries_checked=True)


def infeasible_members(problem: BatchProblem) -> list[int]:
    """Indices of the problems whose allowed pairs hold no assignment of the smaller side."""
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    bad = []
    for b in np.flatnonzero(problem.forbidden):
        mask = problem.original[b] != (-np.inf if problem.maximize else np.inf)
        mask = mask if problem.xp is np else problem.xp.asnumpy(mask)
        if mask.shape[0] > mask.shape[1]:
            mask = mask.T
        if (maximum_bipartite_matching(csr_matrix(mask), perm_type="column") < 0).any():
            bad.append(int(b))
    return bad


def raise_infeasible(bad: list[int], batch: int) -> None:
    if bad:
        shown = ", ".join(map(str, bad[:20])) + (", …" if len(bad) > 20 else "")
        raise InfeasibleError(f"cost matrix is infeasible: problem{'s' if len(bad) > 1 else ''} {shown} of {batch}")


@dataclass
class WorkStack:
    """The (B, r, c) stack (r ≤ c) a rectangular batch engine minimises, and how its answers map
    back: objective = sign · (Σ work + Σ row_offset); ``scale`` (B,) the magnitude the float
    tolerance follows where max |work| would not do (the forbidden entries' sentinel)."""

    values: Any
    sign: int = 1
    row_offset: Any = None  # (B, r) float64 on the device, or None
    scale: Any = None
    notes: list[str] = field(default_factory=list)


_AS_IS = {np.dtype(np.int32): "int32", np.dtype(np.float32): "float32"}  # dtypes a stack is solved in as given


def work_stack(problem: BatchProblem, xp, source=None) -> WorkStack:
    """Transpose tall problems, negate to maximise, widen or narrow to the working dtype, reduce
    float64 rows, and put a per-problem sentinel on forbidden entries."""
    arr = problem.original if source is None else source
    if (not problem.maximize and arr.dtype in _AS_IS and problem.requested_dtype in (None, _AS_IS[arr.dtype])
            and not problem.transposed and arr.flags.c_contiguous and not problem.forbidden.any()):
        return WorkStack(arr)  # already the work stack: no copy (a d2d call's fixed cost is ~0.1 ms)
    if problem.transposed:
        arr = arr.transpose(0, 2, 1)
    notes: list[str] = []
    c = arr.shape[2]
    sign = -1 if problem.maximize else 1
    requested = problem.requested_dtype
    if arr.dtype.kind in "biu" and (requested is None or requested.startswith("int")):
        values = arr.astype(np.int64) if (problem.maximize or arr.dtype.kind == "b") else arr
        if problem.maximize:
            values = -values
        if values.dtype.itemsize <= 4 and values.dtype != np.uint32:  # |c| < 2^31: nothing to check
            return WorkStack(xp.ascontiguousarray(values.astype(requested or "int32", copy=False)), sign)
        lo, hi = (int(values.min()), int(values.max())) if values.size else (0, 0)
        bound = max(abs(lo), abs(hi))
        if bound * 4 * (c + 1) < _INT64_SAFE and not (arr.dtype == np.uint64 and hi >= 2**63):
            target = requested or ("int32" if -(2**31) <= lo and hi < 2**31 else "int64")
            return WorkStack(xp.ascontiguousarray(values.astype(target, copy=False)), sign)
        if requested is not None:
            raise LapInputError(f"integer costs are too large for exact solving as {requested}; drop --dtype")
        notes.append("integer costs too large for exact int64 duals: solved in float64 (as scipy does)")
        arr = arr.astype(np.float64)
    target = requested or ("float32" if arr.dtype.kind == "f" and arr.dtype.itemsize <= 4 else "float64")
    values = arr.astype(target, copy=False)
    if problem.maximize:
        values = -values
    row_offset = scale = None
    if problem.forbidden.any():
        finite = xp.isfinite(values)
        row_min = xp.where(finite, values, xp.inf).min(axis=2)
        row_min = xp.where(xp.isfinite(row_min), row_min, 0).astype(values.dtype)
        values = values - row_min[:, :, None]
        scale = xp.where(finite, values, 0).max(axis=(1, 2)).astype(np.float64)
        sentinel = ((c + 2) * xp.where(scale > 0, scale, 1)).astype(values.dtype)
        values = xp.where(finite, values, sentinel[:, None, None])
        row_offset = row_min.astype(np.float64)
    elif values.dtype == np.float64:  # float32 costs are exact float32 numbers: not reduced
        row_min = values.min(axis=2)
        values = values - row_min[:, :, None]
        row_offset = row_min
    return WorkStack(xp.ascontiguousarray(values), sign, row_offset, scale, notes)


def objectives_of(problem: BatchProblem, col_ind) -> np.ndarray:
    """Per problem, the sum of the chosen original costs: exact for integers."""
    xp = problem.xp
    batch, n, m = problem.shape
    if batch == 0:
        return np.zeros(0)
    assigned = col_ind >= 0
    safe_cols = xp.where(assigned, col_ind, 0)
    values = xp.take_along_axis(problem.original, safe_cols[:, :, None], axis=2)[:, :, 0]
    if problem.original.dtype.kind in "biu":
        values = xp.where(assigned, values, 0)
        host = values if xp is np else xp.asnumpy(values)
        if host.dtype.itemsize < 8 or int(np.abs(host).max(initial=0)) < 2**63 // max(n, 1):
            return host.astype(np.int64).sum(axis=1)
        return np.array([sum(int(x) for x in row) for row in host.tolist()], dtype=object)
    values = xp.where(assigned, values.astype(np.float64), 0.0)
    host = values if xp is np else xp.asnumpy(values)
    if problem.original.dtype.itemsize <= 4:  # float32 values sum exactly in float64 at these sizes
        return host.sum(axis=1)
    # float64: correctly rounded, as Solution.objective (a pairwise sum of 1e6 + U(0, 1e-7) costs
    # errs by several ulps of the total, more than the tolerance the fuzzer holds us to)
    return np.array([math.fsum(row) for row in host.tolist()])


def choose_batch_engine(name: str, problem: BatchProblem) -> tuple[str, str]:
    if name != "auto":
        engine = registry.get(name)
        if not engine.capabilities.batch:
            batch_names = ", ".join(registry.solver_choices(batch=True)[1:])
            raise LapInputError(f"solver {name!r} solves one problem at a time; for a stack use {batch_names}")
        available, why = engine.available()
        if not available:
            from .errors import SolverUnavailable

            raise SolverUnavailable(f"solver {name!r} cannot run here: {why}")
        return name, "requested"
    available, why = probe.cuda_status()
    if not available:
        return "scipy-batch", f"auto: {why}; scipy per problem over a thread pool"
    searchable, why_not = probe.search_kernel_status()
    if not searchable:
        return "scipy-batch", f"auto: {why_not}; scipy per problem over a thread pool"
    batch, n, m = problem.shape
    if min(n, m) and max(n, m) > registry.get("cuda-batch").capabilities.max_columns:
        return "scipy-batch", f"auto: problems of {n}×{m} exceed the GPU batch kernel's columns"
    return "cuda-batch", f"auto: {why}; the whole batch in one GPU launch"


def solve_batch(costs, *, solver: str = "auto", maximize: bool = False, dtype: str | None = None,
                timeout: float | None = None, device: int | None = None) -> BatchSolution:
    """Solve every problem of a (B, n, m) stack (or a list of 2-D matrices).

    Returns a BatchSolution: ``col_ind`` (B, n) (−1: unassigned row) in the caller's library and
    device, ``objectives`` (B,), and a ``report`` (engine, device, times, problems per second,
    certificate). Raises InfeasibleError naming the infeasible members; nothing is returned then.
    A list of matrices of different shapes gives ``col_ind`` as a list of arrays.
    """
    start = time.perf_counter()
    check_entries = False  # the default: a batch engine that checks entries itself does not need it
    if not maximize and dtype is None and device is None and solver in _PLAIN_SOLVERS:
        solution = _solve_plain_stack(costs, solver, timeout, start)
        if isinstance(solution, BatchSolution):
            return solution
        check_entries = solution is _CHECK_ENTRIES  # its launch met NaN or an infinity: check first
    if isinstance(costs, (list, tuple)) and costs and not _stackable(costs):
        return _solve_ragged(costs, solver=solver, maximize=maximize, dtype=dtype, timeout=timeout, device=device)
    problem = prepare_batch(costs, maximize=maximize, dtype=dtype, check_entries=check_entries)
    name, reason = choose_batch_engine(solver, problem)
    batch, n, m = problem.shape
    if batch == 0 or n == 0 or m == 0:
        col = problem.xp.full((batch, n), -1, dtype=np.int64)
        return _finish(problem, name, reason, start, col, "none", str(problem.original.dtype), {}, None, [])
    engine = registry.get(name)
    if not engine.capabilities.checks_entries:
        problem = with_checked_entries(problem)
    module = engine.load()
    try:
        if problem.entries_checked:
            raise_infeasible(infeasible_members(problem), batch)
        result = module.run_batch(problem, timeout=timeout, device=device)
    except EntriesNeedChecking:  # the engine saw NaN or an infinity: check them, then solve properly
        problem = with_checked_entries(problem)
        raise_infeasible(infeasible_members(problem), batch)
        result = module.run_batch(problem, timeout=timeout, device=device)
    return _finish(problem, name, reason, start, result.col_ind, result.device, result.dtype, result.details,
                   result.certificate, result.notes, result.objectives)


_PLAIN_SOLVERS = ("auto", "cuda-batch")
_CUPY_ORIGIN = Origin("cupy", True)
_NUMPY_ORIGIN = Origin("numpy", False)


_CHECK_ENTRIES = object()  # _solve_plain_stack's answer when its launch met NaN or an infinity


def _solve_plain_stack(costs, solver: str, timeout: float | None, start: float):
    """The common GPU call on a lean path: a C-contiguous int32 or float32 stack of n <= m problems
    (at most the kernel's columns) minimised on the current device by ``cuda-batch`` (``auto``'s
    choice for it) is its own work stack: no BatchProblem checks, no engine choice, no copy on the
    device. A stack on the GPU (CuPy, or a CUDA torch tensor through DLPack) is launched at once
    (engines.cuda.batch.launch_plain_stack); a host stack (NumPy, or a CPU torch tensor) is launched as soon
    as its upload's DMAs are issued, the launch prepared while its pieces are copied
    (lapcli.cuda.staging.start_upload, lapcli.cuda.batch_lap.certified_launch). The bookkeeping runs while the kernel does.
    Returns the BatchSolution; None when any of that does not hold, or CuPy is not imported yet
    (the general path solves the stack); _CHECK_ENTRIES when the kernel met NaN or an infinity
    (the general path checks the entries first: they are invalid, or forbidden pairs, and the stack
    is solved once more)."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return None
    if type(costs) is cupy.ndarray:
        arr, origin = costs, _CUPY_ORIGIN
    elif type(costs) is np.ndarray:
        arr, origin = costs, _NUMPY_ORIGIN
    elif is_torch(costs):
        arr, origin = as_array(costs)
    else:
        return None
    if arr.ndim != 3 or arr.dtype not in _AS_IS:
        return None
    batch, n, m = arr.shape
    on_host = not origin.on_gpu
    if not (batch and 1 <= n <= m) or not arr.flags.c_contiguous:
        return None
    if not on_host and arr.data.device_id != cupy.cuda.runtime.getDevice():
        return None
    if solver == "auto" and not (probe.cuda_status()[0] and probe.search_kernel_status()[0]):
        return None
    engine = registry.get("cuda-batch")
    if m > engine.capabilities.max_columns or not engine.available()[0]:
        return None
    module = engine.load()
    started = None
    if on_host:
        from .cuda.staging import start_upload

        begin, copied_in = module.reused_events(cupy.cuda.runtime.getDevice(), "batch", 2)
        begin.record()
        pending = start_upload(arr)
        try:
            launch = module.certified_launch(pending.out, n_out=n, transposed=False, timeout=timeout)
        finally:
            values = pending.wait()
        copied_in.record()
        run, started = launch(), (begin, copied_in)
    else:
        values = arr
        run = module.launch_plain_stack(arr, timeout=timeout)
    # the bookkeeping while the kernel runs (a 10000 x 16 stack's is ~0.12 ms)
    device_col_ind = None if on_host else run.col_ind
    caller_col_ind = None if on_host else origin.to_caller(device_col_ind)
    problem = BatchProblem(arr, np if on_host else cupy, origin, False, np.zeros(batch, dtype=bool),
                           entries_checked=False)
    reason = "requested" if solver != "auto" else choose_batch_engine("auto", problem)[1]
    try:
        result = module.collect(run, WorkStack(values), on_host=on_host, entries_checked=False, started=started,
                                device_col_ind=device_col_ind)
    except EntriesNeedChecking:
        return _CHECK_ENTRIES
    return _finish(problem, "cuda-batch", reason, start, result.col_ind, result.device, result.dtype, result.details,
                   result.certificate, result.notes, result.objectives, caller_col_ind=caller_col_ind)


def _stackable(costs) -> bool:
    shapes = {np.shape(c) for c in costs}
    return len(shapes) == 1


def _finish(problem, name, reason, start, col_ind, device, dtype, details, certificate, notes,
            objectives=None, caller_col_ind=None) -> BatchSolution:
    from .certificate import not_certified

    if objectives is None:  # engines that do not sum the objectives themselves
        objectives = objectives_of(problem, col_ind)
    batch, n, m = problem.shape
    total_ms = (time.perf_counter() - start) * 1e3
    report = BatchReport(
        batch=batch, n_rows=n, n_cols=m, maximize=problem.maximize, solver=name, device=device, dtype=dtype,
        total_ms=total_ms, problems_per_second=batch / (total_ms / 1e3) if total_ms else 0.0, version=__version__,
        reason=reason, details=details, certified=certificate is not None,
        certificate=certificate if certificate is not None else not_certified(f"engine {name} gives no duals"),
        notes=list(notes), objectives=objectives,
    )
    if caller_col_ind is None:
        caller_col_ind = problem.origin.to_caller(col_ind)
    return BatchSolution(col_ind=caller_col_ind, objectives=objectives, report=report)


def _solve_ragged(costs, **options) -> BatchSolution:
    """A list of matrices of several shapes: one batch per shape, results back in input order."""
    start = time.perf_counter()
    groups: dict[tuple, list[int]] = {}
    for index, matrix in enumerate(costs):
        groups.setdefault(tuple(np.shape(matrix)), []).append(index)
    col_ind: list = [None] * len(costs)
    objectives: list = [None] * len(costs)
    reports = []
    for shape, members in groups.items():
        first = costs[members[0]]
        stack = _stack([costs[i] for i in members], first)
        solution = solve_batch(stack, **options)
        reports.append(solution.report)
        for position, index in enumerate(members):
            col_ind[index] = solution.col_ind[position]
            objectives[index] = solution.objectives[position]
    head = reports[0]
    total_ms = (time.perf_counter() - start) * 1e3
    report = BatchReport(
        batch=len(costs), n_rows=-1, n_cols=-1, maximize=head.maximize, solver=",".join(sorted({r.solver for r in reports})),
        device=head.device, dtype=",".join(sorted({r.dtype for r in reports})), total_ms=total_ms,
        problems_per_second=len(costs) / (total_ms / 1e3), version=__version__,
        reason=f"{len(groups)} shapes, one batch each", certified=all(r.certified for r in reports),
        certificate={"groups": [r.certificate for r in reports]}, objectives=[o.item() if hasattr(o, "item") else o for o in objectives],
    )
    return BatchSolution(col_ind=col_ind, objectives=np.array(objectives, dtype=object), report=report)


def _stack(matrices, like):
    arr, origin = as_array(like)
    if origin.library == "torch":
        import torch

        return torch.stack(list(matrices))
    xp = np if isinstance(arr, np.ndarray) else __import__("cupy")
    return xp.stack([as_array(m)[0] for m in matrices])


def batch_linear_assignment(costs, maximize: bool = False):
    """The column of each row for every problem of a (B, n, m) stack, −1 for an unassigned row:
    torch-linear-assignment's function, on NumPy, CuPy or torch input (result of the same kind)."""
    return solve_batch(costs, maximize=maximize).col_ind
