"""Duals for an engine that gives none (scipy, lapx), so that its answer is certified like any other.

Given an assignment σ of a k × m work matrix c (k ≤ m, minimise: lapcli.work), duals exist that
prove it optimal if and only if it is optimal. With p = −v they are shortest distances: the dual
constraint of row i and column j, ``c[i, j] − u[i] − v[j] ≥ 0`` with u[i] = c[i, σ(i)] − v[σ(i)], reads

    p[σ(i)] ≤ p[j] + (c[i, j] − c[i, σ(i)])        (an edge j → σ(i) of that weight),

and the free columns of a rectangular matrix keep v = 0 (the sources, at distance 0; for a square
matrix every column is a source). An optimal σ leaves no negative cycle, so Bellman–Ford's passes
end; each pass relaxes only the columns whose distance fell in the last one (their rows of cᵀ), so
a typical random matrix needs a few dozen cheap passes after one full one. More full passes than
columns prove a negative cycle: σ is not optimal. The duals then go through lapcli.certificate, as every
engine's do. Integer costs are recovered in int64, exactly.
"""

from __future__ import annotations

import time

import numpy as np

from .arrays import host
from .certificate import HOST_CHUNK_ELEMENTS, MINIMISED, certify, check_rounding

_UNREACHED_INT = np.iinfo(np.int64).max // 4  # above any distance of int64-safe work (lapcli.work)
# Rounds with more fallen columns than this relax only the nearer half of them, as Dijkstra would
# (their distances are likelier final): 15-25 % fewer relaxations on U[0, 1) costs, the same on
# squared distances; interleaved with full rounds, Bellman-Ford's bound on those still holds.
_ALL_FALLEN_BELOW = 64
# A round relaxes its columns in blocks of the host check's size (certificate.HOST_CHUNK_ELEMENTS),
# which stay in the cache through the copy, the added distance and the minimum: a round of 4000
# columns of 4000 rows 60 -> 27 ms; whole recoveries of U[0, 1) 1000 × 1000 11.1 -> 10.3 ms,
# 2000 × 2000 60 -> 53 ms (2-core CI machine).


# The default budget of a recovery, in passes over the matrix, per engine: scipy's own solve of a
# random 1000 × 1000 float matrix costs about as much as 70 such passes (2-core CI machine, 29 ms),
# and a recovery there relaxes ~6 (uniform costs) to ~56 (squared distances) passes' worth of
# columns; lapx solves the square matrices auto gives it 2-5× faster than scipy.
DEFAULT_PASSES = {"scipy": 64, "lapx": 16}


def default_budget(engine: str) -> float:
    """The passes a recovery may take by default for ``engine`` (a batch engine: its solver's)."""
    return DEFAULT_PASSES.get(engine.removesuffix("-batch"), 16)


class TooCostly(Exception):
    """The recovery went past its budget (it is then skipped, not failed)."""


def recover(cost: np.ndarray, col_of_row: np.ndarray, budget_passes: float | None = None,
            tolerance: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) for the assignment ``col_of_row`` of the k × m host work matrix ``cost`` (k ≤ m),
    int64 for integers and float64 otherwise. Raises ValueError when the assignment is not optimal
    (a negative cycle), TooCostly once it has relaxed more than ``budget_passes`` passes' worth of
    columns (a count, not a time: the same input is certified or not on every machine).

    ``tolerance``: the certificate's zero of a float work matrix (lapcli.work.float_eps). A column
    falls only by more than half of it: float costs of exactly tied assignments (1-D points'
    |x − y|, where many pairings cost the same) leave cycles of a few ulps below zero, which
    would fall for ever; the duals then meet each constraint within half the tolerance. Float
    distances past float64's range (costs near 1.8e308) become +inf: no column falls through them."""
    with np.errstate(over="ignore"):
        return _recovered(cost, col_of_row, budget_passes, tolerance)


def _recovered(cost: np.ndarray, col_of_row: np.ndarray, budget_passes: float | None, tolerance: float):
    exact = cost.dtype.kind in "biu"
    dual = np.int64 if exact else np.float64
    c = cost.astype(dual, copy=False)
    k, m = c.shape
    rows = np.arange(k)
    assigned = c[rows, col_of_row]
    free = np.ones(m, dtype=bool)
    free[col_of_row] = False
    unreached = _UNREACHED_INT if exact else np.inf
    if free.any():
        distance = np.where(free, dual(0), dual(unreached))
        best = c[:, free].min(axis=1)  # per row: the least p[j] + c[i, j] over the columns reached
    else:
        distance = np.zeros(m, dtype=dual)
        best = c.min(axis=1)
    by_column = None
    slack = dual(0) if exact else dual(tolerance / 2)
    relaxed = 0  # columns relaxed so far
    full_rounds = nearer_rounds = 0
    while True:
        candidate = best - assigned
        fell = np.flatnonzero(candidate < distance[col_of_row] - slack)
        if not fell.size:
            v = -distance
            return assigned - v[col_of_row], v
        if fell.size > _ALL_FALLEN_BELOW and nearer_rounds < m:
            # relax the nearer half first (the rest stays fallen): fewer columns fall twice
            nearer_rounds += 1
            fallen = candidate[fell]
            middle = fell.size // 2
            fell = fell[fallen <= np.partition(fallen, middle)[middle]]
        else:  # a Bellman-Ford round: every fallen column; after m + 1 of them only a cycle still falls
            full_rounds += 1
            if full_rounds > m + 1:
                raise ValueError("the assignment is not optimal: its residual graph has a negative cycle")
        columns = col_of_row[fell]
        distance[columns] = candidate[fell]
        if by_column is None:
            by_column = np.ascontiguousarray(c.T)  # the relaxed columns' costs are then contiguous rows
        step = max(1, HOST_CHUNK_ELEMENTS // max(k, 1))
        for start in range(0, columns.size, step):  # cache-sized blocks of the round's columns
            block = columns[start:start + step]
            reached = by_column[block]  # a copy (fancy indexing): add the distances in place, no second temporary
            reached += distance[block][:, None]
            np.minimum(best, reached.min(axis=0), out=best)
        relaxed += columns.size
        if budget_passes is not None and relaxed > budget_passes * m:
            raise TooCostly()


def certified_duals(problem, rows: np.ndarray, cols: np.ndarray, engine: str, budget_passes: float | None):
    """(duals in the caller's coordinates, certificate dict) for a single problem's answer
    (``rows``, ``cols`` in the caller's matrix), or (None, why) when the recovery would cost more
    than ``budget_passes`` passes over the matrix. Raises SolverError when the answer is not optimal."""
    from .errors import LapInputError, SolverError
    from .work import WorkMatrix

    try:
        work = problem.work_stack(np)
    except LapInputError as error:  # costs the engine solved but no work can be built of (an overflowing spread)
        return None, f"no certificate: {error}"
    values = work.values[0]
    col_of_row = np.full(values.shape[0], -1, dtype=np.int64)  # a row the answer left out fails the check
    if problem.transposed:  # work rows are the caller's columns
        col_of_row[cols] = rows
    else:
        col_of_row[rows] = cols
    began = time.perf_counter()
    row_offset, col_offset = (None if o is None else np.asarray(o[0]) for o in (work.row_offset, work.col_offset))
    adapter = WorkMatrix(values, work.eps(0), row_offset, col_offset)
    cap, capped = _capped_eps(adapter, col_of_row)
    # recovered and proved at the capped tolerance where large costs no optimum takes inflate the work's
    # (lapcli.cost_cap): recovered from the costs capped at C, whose duals hold for the true costs (no
    # smaller) and stay within C (shortest paths through the large costs drifted them to their size);
    # where the duals do not hold there, at the work's own, which decides
    for eps in dict.fromkeys((capped, work.eps(0))):
        try:
            u, v = recover(values if eps == work.eps(0) else np.minimum(values, cap), col_of_row, budget_passes, eps)
            if eps != work.eps(0) and check_rounding(u, v, 0.0) > eps:  # slacks that round past the capped one
                raise SolverError("duals too large to be checked at the capped tolerance")
            certificate = certify(values, col_of_row, u, v, eps, engine).to_dict()
            break
        except TooCostly:  # (a tighter tolerance may take more passes: the work's own is tried too)
            if eps == work.eps(0):
                return None, (f"recovering {engine}'s duals would cost more than {budget_passes:g} passes over "
                              "the matrix, about its solve; certify=True forces it")
        except (ValueError, SolverError) as error:
            if eps == work.eps(0):
                raise SolverError(f"the {engine} engine's answer failed its optimality certificate: {error}"
                                  if isinstance(error, ValueError) else str(error)) from None
    certificate["duals_recovered_ms"] = round((time.perf_counter() - began) * 1e3, 3)
    return problem.duals_from_work(u, v, adapter), certificate


def _capped_eps(work, col_of_row: np.ndarray) -> tuple[float | None, float]:
    """(C, the float tolerance capped by it) where large costs no optimum takes inflate the work's
    (lapcli.cost_cap: C the answer's reduced total, doubled), else (None, the work's own): the duals
    are recovered and proved there."""
    from .cost_cap import cap_for, judged_at_cap
    from .work import float_eps

    cap = cap_for(work, col_of_row) if judged_at_cap(work) else None
    return (None, work.eps) if cap is None else (cap, float_eps(work.values.shape[1], cap))


# Below this many entries per problem, recovering a problem's duals and checking them costs more
# than scipy's solve of it (2-core CI machine, U[0, 1) stacks: 7.8× the solve at 16 × 16, 4.6× at
# 24 × 24, 1.3× at 64 × 64, 0.64× at 128 × 128, 0.31× at 256 × 256).
BATCH_CERTIFY_FROM = 96 * 96


def certified_stack(problem, col_ind: np.ndarray, engine: str, budget_passes: float | None,
                    force: bool = False) -> dict:
    """The certificate of every problem of a stack's answer (``col_ind`` (B, n), the caller's
    columns, −1 unassigned), or ``not_certified`` with why: by default only for problems large
    enough that it costs less than their solve (BATCH_CERTIFY_FROM) and within ``budget_passes``
    each; ``force`` always. Raises SolverError when an answer is not optimal."""
    from .certificate import not_certified
    from .errors import LapInputError, SolverError

    batch, r, c = problem.shape
    work_rows, work_cols = min(r, c), max(r, c)
    if not force and work_rows * work_cols < BATCH_CERTIFY_FROM:
        return not_certified(f"recovering {engine}'s duals for problems of {r}×{c} would cost more than solving "
                             "them (certify=True forces it)")
    try:
        work = problem.work_stack(np)
    except LapInputError as error:
        return not_certified(f"no certificate: {error}")
    col_ind = np.asarray(col_ind, dtype=np.int64)
    if problem.transposed:  # work rows are the caller's columns
        col_of_row = np.full((batch, work_rows), -1, dtype=np.int64)
        problems, rows = np.nonzero(col_ind >= 0)
        col_of_row[problems, col_ind[problems, rows]] = rows
    else:
        col_of_row = col_ind
    began = time.perf_counter()
    proofs = []
    for b in range(batch):
        try:
            u, v = recover(work.values[b], col_of_row[b], None if force else budget_passes, work.eps(b))
        except TooCostly:
            return not_certified(f"recovering {engine}'s duals for problem {b} would cost more than "
                                 f"{budget_passes:g} passes over it, about its solve; certify=True forces it")
        except ValueError as error:
            raise SolverError(f"the {engine} engine's answer to problem {b} failed its optimality "
                              f"certificate: {error}") from None
        try:
            proofs.append(certify(work.values[b], col_of_row[b], u, v, work.eps(b), engine).to_dict())
        except SolverError as error:
            raise _of_problem(error, b) from None
    return _per_problem(proofs, began, batch)


def _of_problem(error, b: int):
    """A certificate's failure (SolverError) on problem ``b`` of a batch, naming it."""
    from .errors import SolverError

    said, answer = str(error), " engine's answer "
    named = said.replace(answer, f"{answer}to problem {b} ", 1) if answer in said else f"problem {b}: {said}"
    return SolverError(named)


def _per_problem(proofs: list[dict], began: float, problems: int) -> dict:
    """One certificate for a batch from its problems' (the worst slacks, the widest tolerance)."""
    return {"checked": f"u_i + v_j <= c_ij everywhere, equality on the assignment, per problem (duals recovered), "
                       f"{MINIMISED}",
            "min_slack": min((float(p["min_slack"]) for p in proofs), default=0.0),
            "max_assigned_slack": max((float(p["max_assigned_slack"]) for p in proofs), default=0.0),
            "tolerance": max((float(p["tolerance"]) for p in proofs), default=0.0),
            "objective_within": max((float(p["objective_within"]) for p in proofs), default=0.0),
            "ms": round((time.perf_counter() - began) * 1e3, 3), "where": "host", "problems": problems}


def certified_members(members, col_ind: np.ndarray, maximize: bool, engine: str, budget_passes: float | None,
                      force: bool = False) -> dict:
    """The certificate of every member of a ragged batch solved on the CPU (``col_ind`` (B, most
    rows), −1 unassigned), or ``not_certified`` with why: by default only when every non-empty
    member is large enough that it costs less than its solve (BATCH_CERTIFY_FROM), ``force`` always.
    Raises SolverError naming the member whose answer is not optimal."""
    from .certificate import not_certified
    from .errors import SolverError
    from .problem import prepare

    sizes = members.rows * members.cols
    sizes = sizes[sizes > 0]  # an empty member (an image with no target) has nothing to check, at no cost
    if not force and len(sizes) and sizes.min() < BATCH_CERTIFY_FROM:
        return not_certified(f"recovering {engine}'s duals for members as small as {int(sizes.min())} entries would "
                             "cost more than solving them (certify=True forces it)")
    began = time.perf_counter()
    proofs = []
    for b in range(len(members)):
        cost = host(members.member(b))
        if cost.size == 0:
            continue
        cols = np.asarray(col_ind[b, :cost.shape[0]])
        rows = np.flatnonzero(cols >= 0)
        try:
            _, proof = certified_duals(prepare(cost, maximize=maximize), rows, cols[rows], engine,
                                       None if force else budget_passes)
        except SolverError as error:
            raise _of_problem(error, b) from None
        if not isinstance(proof, dict):
            return not_certified(f"member {b}: {proof}")
        proofs.append(proof)
    return _per_problem(proofs, began, len(members))
