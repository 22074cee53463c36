"""The NumPy twins of the CUDA kernels that are not engines themselves: the readable specifications
the CPU tests run and the GPU tests compare against, kept out of the engines' production paths.

- :func:`reference_stack` is kernels/batch_lap.cu (engine ``cuda-batch``): shortest augmenting
  paths per problem (scipy's algorithm, Crouse 2016), same steps S1-S4, same tie-break, same duals,
  with Jonker-Volgenant's column reduction as the start of a square problem and a row reduction
  (each row at its row minimum, then JV's reduction transfer) as the start of a rectangular one;
- :func:`sap_twin` is engine ``cuda-sap``: the classical kernel's auction start
  (lapcli.engines.cpu.numpy_hungarian.auction_start), then :func:`reference_stack` from it;
- :func:`auction_twin` (lapcli.twins.auction) is kernels/auction.cu, engine ``cuda-sap`` on square
  point sets and on dense squares above the one-block search (its full scans read every column;
  on point sets of up to 4 coordinates the kernels' read only the tiles under a threshold);
- :func:`hand_over` is how engine ``cuda-sap`` starts its searches from the auction's duals;
- lapcli.twins.tiles is kernels/auction_tiles.cu: the order and the tiles of a point auction's columns.

The twin of kernels/hungarian.cu is the ``numpy`` engine itself (lapcli.engines.cpu.numpy_hungarian).
"""

from __future__ import annotations

import numpy as np

from ..engines.cpu.numpy_hungarian import auction_start
from ..steps import AUCTION_PATIENCE, AUCTION_ROUNDS
from .auction import auction_twin  # noqa: F401  (the twins' one namespace)


def column_reduction(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's start for a square problem without a warm start: v[j]
    = min over i of c[i][j] (lowest row on ties), and each row that is some column's minimum takes
    the lowest such column. Returns (v, col_of_row), -1 for a free row. For finite costs (the
    kernel's comparisons skip a NaN where NumPy's minimum takes it; a stack with NaN or an infinity
    is solved again after its entries are checked, so the twin need not follow it there)."""
    n = cost.shape[0]
    v = cost.min(axis=0)
    lowest_row = cost.argmin(axis=0)
    col_of_row = np.full(n, -1, dtype=np.int64)
    for j in range(cost.shape[1] - 1, -1, -1):  # descending: the lowest column is written last
        col_of_row[lowest_row[j]] = j
    return v, col_of_row


def row_reduction(cost: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kernel's start for a rectangular problem (n < m) without a warm start: row i claims the
    column of its row minimum (lowest column on ties) and each column goes to the lowest row
    claiming it; then the reduction transfer (Jonker & Volgenant 1987): a row that kept its column
    j sets v[j] = c[i][j] − (its second-smallest cost), 0 where that is not finite, and v = 0 on
    every other column. Returns (v, col_of_row), -1 for a free row (a row whose minimum is not
    finite claims nothing). Every assigned row is then tight at its row's minimum of c − v, and
    v ≤ 0 only on taken columns. For costs without NaN: the kernel orders a NaN past +inf where
    NumPy's argmin takes it, and a launch that met a NaN is solved again after its entries are
    checked, so the twin need not follow it there."""
    n, m = cost.shape
    claim = cost.argmin(axis=1)
    owner = np.full(m, -1, dtype=np.int64)
    for i in range(n - 1, -1, -1):  # descending: the lowest row is written last
        if np.isfinite(cost[i, claim[i]]):
            owner[claim[i]] = i
    col_of_row = np.full(n, -1, dtype=np.int64)
    taken = np.flatnonzero(owner >= 0)
    col_of_row[owner[taken]] = taken
    v = np.zeros(m, dtype=np.int64 if cost.dtype.kind in "iu" else np.float64)
    for i in owner[taken]:
        j = col_of_row[i]
        second = np.min(np.delete(cost[i], j)) if m > 1 else np.inf
        if np.isfinite(second):
            v[j] = cost[i, j] - second
    return v, col_of_row


def reference_stack(costs: np.ndarray, warm_start=None, reduction_start: bool = True):
    """Solve each costs[b] like the kernel does; return (col_of_row, u, v, status) as NumPy arrays.
    ``warm_start`` = (v, col_of_row) as solve_stack takes it (square problems); without one, a
    square problem starts from column_reduction and a rectangular one from row_reduction, as the
    kernel does (``reduction_start`` False: a search from every row, the cold start of the other
    kernels a test may compare with)."""
    costs = np.asarray(costs)
    batch, n, m = costs.shape
    dual = np.int64 if costs.dtype.kind in "iu" else np.float64
    col_of_row = np.full((batch, n), -1, dtype=np.int32)
    u = np.zeros((batch, n), dtype=dual)
    v_all = np.zeros((batch, m), dtype=dual)
    status = np.zeros(batch, dtype=np.int32)
    if warm_start is not None:
        assert n == m, "a warm start needs square problems"
        v_all[:] = warm_start[0]
    for b in range(batch):
        c = costs[b].astype(dual)
        v = v_all[b]
        col4row = np.full(n, -1, dtype=np.int64)
        if warm_start is not None:
            col4row[:] = warm_start[1][b]
        elif reduction_start and n == m:
            v[:], col4row[:] = column_reduction(c)
        elif reduction_start:
            v[:], col4row[:] = row_reduction(c)
        _search_free_rows(c, v, col4row)
        col_of_row[b] = col4row
        u[b] = c[np.arange(n), col4row] - v[col4row]
    return col_of_row, u, v_all, status


def _search_free_rows(c: np.ndarray, v: np.ndarray, col4row: np.ndarray) -> int:
    """S1-S4 from every row ``col4row`` leaves free (-1), in order, updating v and col4row in
    place (c and v of the duals' dtype); returns the Dijkstra steps taken (rows scanned)."""
    m = c.shape[1]
    dual = v.dtype.type
    inf = np.iinfo(np.int64).max if dual is np.int64 else np.inf
    columns = np.arange(m)
    row4col = np.full(m, -1, dtype=np.int64)
    row4col[col4row[col4row >= 0]] = np.flatnonzero(col4row >= 0)
    steps = 0
    for root in np.flatnonzero(col4row < 0):
        spc = np.full(m, inf, dtype=dual)
        path = np.full(m, -1, dtype=np.int64)
        scanned = np.zeros(m, dtype=bool)
        i, ui, min_val, sink = root, dual(0), dual(0), -1
        while sink < 0:
            steps += 1
            d = (c[i] - v) + (min_val - ui)  # S1
            better = ~scanned & (d < spc)
            spc[better], path[better] = d[better], i
            open_ = np.flatnonzero(~scanned)  # S2: (distance, assigned, index) minimum
            j = open_[np.lexsort((columns[open_], row4col[open_] >= 0, spc[open_]))[0]]
            min_val, scanned[j] = spc[j], True
            if row4col[j] < 0:
                sink = j
            else:
                i = row4col[j]
                ui = c[i, j] - v[j]
        v[scanned] -= min_val - spc[scanned]  # S3
        _augment(path, row4col, col4row, sink, root)
    return steps


def _augment(path: np.ndarray, row4col: np.ndarray, col4row: np.ndarray, sink: int, root: int) -> None:
    """S4: flip the alternating path from ``sink`` back to ``root`` along ``path`` (each column's
    row in the search), in place; raises where the walk is longer than there are rows (a cycle)."""
    j, walked = sink, 0
    while True:
        i = path[j]
        row4col[j] = i
        col4row[i], j = j, col4row[i]
        walked += 1
        if i == root:
            return
        if walked > len(col4row):
            raise RuntimeError("the augmenting walk found a cycle")


def search_steps(cost: np.ndarray, v: np.ndarray, col_of_row: np.ndarray) -> int:
    """The Dijkstra steps (row scans) the kernel's searches take on one problem from the start
    (v, col_of_row): what a start saves is counted here, the kernel's time being about that
    count times a step's latency."""
    dual = np.int64 if np.asarray(cost).dtype.kind in "iu" else np.float64
    return _search_free_rows(np.asarray(cost).astype(dual), np.array(v, dtype=dual), np.array(col_of_row, dtype=np.int64))


def check_duals(costs: np.ndarray, col_of_row: np.ndarray, u: np.ndarray, v: np.ndarray,
                eps: float = 0.0) -> None:
    """Raise AssertionError unless (col_of_row, u, v) certify optimality of every problem."""
    batch, n, m = costs.shape
    dual = u.dtype
    for b in range(batch):
        c = costs[b].astype(dual)
        cols = col_of_row[b]
        assert np.all(cols >= 0) and np.unique(cols).size == n, f"problem {b}: not an assignment"
        reduced = c - u[b][:, None] - v[b][None, :]
        assert reduced.min() >= -eps, f"problem {b}: reduced cost {reduced.min()} < -eps"
        assert np.all(np.abs(reduced[np.arange(n), cols]) <= eps), f"problem {b}: assigned pair not tight"
        if m == n:  # every column is taken: v is free (the columns' constraints bind only for m > n)
            continue
        assert v[b].max() <= eps, f"problem {b}: v > 0"
        free = np.ones(m, dtype=bool)
        free[cols] = False
        assert np.all(np.abs(v[b][free]) <= eps), f"problem {b}: v != 0 on a free column"


def sap_twin(cost: np.ndarray, rounds: int = AUCTION_ROUNDS, patience: int = AUCTION_PATIENCE):
    """The engine's specification in NumPy: (column of each row, u, v, rounds, searches).
    Integer costs give the kernel's answer exactly (same bids, ties and stopping rule; same
    search order and tie-break)."""
    cost = np.asarray(cost)
    dual = np.int64 if cost.dtype.kind in "iu" else np.float64
    if rounds == 0 or cost.shape[0] < 2:  # no auction: the search kernel's own start, the column reduction
        columns, u, v, _ = reference_stack(cost[None])
        return columns[0], u[0], v[0], 0, int((column_reduction(cost.astype(dual))[1] < 0).sum())
    _, v, column_of_row, _, done = auction_start(cost.astype(dual), rounds=rounds, patience=patience)
    searches = int((column_of_row < 0).sum())
    columns, u, v, _ = reference_stack(cost[None], warm_start=(v[None], column_of_row[None].astype(np.int32)))
    return columns[0], u[0], v[0], done, searches


def hand_over(cost: np.ndarray, col_of_row: np.ndarray, v: np.ndarray,
              slack: float = 0.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The searches' start from any duals (engine ``cuda-sap`` after its ε-scaling auction on a
    dense square): integer costs' v floored to int64 (the searches then compare integers); each
    row keeps its column (−1: none) only where that column attains the row's minimum of c − v
    exactly, and is free otherwise. Every kept row is then tight with u = that minimum, and every
    reduced cost of such duals is ≥ 0, which is all reference_stack's warm start needs: its
    searches are exact from any duals, good duals only make them short.

    ``slack`` (floats: the last phase's 2ε, the tail a chain limit left): a row is kept where its
    column is within ``slack`` of the row's minimum, and that pair's cost is lowered to the
    minimum in the matrix the searches get (an auction's float answer leaves almost no row
    exactly tight; the exact rule would free most rows). The searches are exact on the lowered
    matrix; its reduced costs bound the true ones from below, so their duals stay feasible for
    the true costs and a kept pair ends ≤ ``slack`` from tight: inside the certificate's tolerance
    when ε is a fraction of it.
    Returns (v, col_of_row int32, the matrix to search: ``cost`` itself, or the lowered float64
    copy)."""
    exact = cost.dtype.kind in "iu"
    v = np.floor(v).astype(np.int64) if exact else np.asarray(v, dtype=np.float64)
    reduced = cost.astype(v.dtype) - v[None, :]
    assigned = col_of_row >= 0
    held = np.where(assigned, col_of_row, 0)
    minima = reduced.min(axis=1)
    gap = reduced[np.arange(cost.shape[0]), held] - minima
    tight = assigned & (gap <= slack if slack and not exact else gap == 0)
    searched = cost
    if slack and not exact:
        rows = np.flatnonzero(tight & (gap > 0))
        searched = cost.astype(np.float64)  # a copy: a float32 ulp is coarser than 2ε
        searched[rows, col_of_row[rows]] = minima[rows] + v[col_of_row[rows]]
    return v, np.where(tight, col_of_row, -1).astype(np.int32), searched


def round_searches(cost: np.ndarray, v: np.ndarray, col_of_row: np.ndarray, rows_a_round: int | None = None,
                   delta: float = 1e-9):
    """kernels/sap_rounds.cu (lapcli.cuda.sap_rounds) in NumPy: from ``v`` and a partial
    assignment whose assigned rows are tight, each free row's search in rounds. A round reduces the
    least pending distance and selects, in the same pass, the pending columns within ``delta`` of
    the last round's least (at most ``rows_a_round``, the lowest-numbered columns first; the kernel
    takes whichever warps come first), whose rows the next round scans; reduced costs clamped at 0
    and added last; the search stops where a free column is strictly nearer than every pending
    one. Returns (col_of_row, v, rounds, rows scanned) with a list entry per search."""
    from ..cuda import sap_rounds

    rows_a_round = rows_a_round or sap_rounds.ROUND_ROWS
    narrow_above = rows_a_round * sap_rounds.NARROW_ABOVE // sap_rounds.ROUND_ROWS
    widen_below = rows_a_round * sap_rounds.WIDEN_BELOW // sap_rounds.ROUND_ROWS
    c = np.asarray(cost, dtype=np.float64)
    m = c.shape[1]
    v, col4row = np.array(v, dtype=np.float64), np.array(col_of_row, dtype=np.int64)
    row4col = np.full(m, -1)
    row4col[col4row[col4row >= 0]] = np.flatnonzero(col4row >= 0)
    rounds, scanned_rows = [], []
    for root in np.flatnonzero(col4row < 0):
        spc, path = c[root] - v, np.full(m, root)  # R0, u[root] = 0
        scanned = np.zeros(m, dtype=bool)
        count = rows = 1
        threshold = -np.inf  # the round after R0 selects nothing
        while True:
            assigned = row4col >= 0
            pending = assigned & ~scanned
            wanted = np.flatnonzero(pending & (spc <= threshold))  # R2, by the last round's threshold
            least = spc[pending].min() if pending.any() else np.inf  # R1, over the same pending columns
            free = np.where(assigned, np.inf, spc)
            sink = int(free.argmin())
            if free[sink] < least:
                break
            if not np.isfinite(least):
                raise RuntimeError("no column is left at a finite distance")
            if count > 4 * m + 64:  # the kernel's SAP_PATH_CAP
                raise RuntimeError(f"a search ran past {4 * m + 64} rounds")
            if threshold > -np.inf:
                if len(wanted) > narrow_above:
                    delta /= 2
                elif len(wanted) < widen_below:
                    delta = min(max(2 * delta, 1e-300), 1e300)
            threshold = least + delta
            selected = wanted[:rows_a_round]
            scanned[selected] = True
            count, rows = count + 1, rows + len(selected)
            if not len(selected):  # the window moved past every pending column: a round of no rows
                continue
            through = row4col[selected]
            u = c[through, selected] - v[selected]
            d = spc[selected, None] + np.maximum((c[through] - v) - u[:, None], 0.0)  # R3
            best = d.argmin(axis=0)
            lower = d[best, np.arange(m)] < spc
            spc[lower], path[lower] = d[best, np.arange(m)][lower], through[best[lower]]
            scanned[lower] = False
        below = spc < free[sink]
        v[below] -= free[sink] - spc[below]  # S3
        _augment(path, row4col, col4row, sink, root)  # S4
        rounds.append(count)
        scanned_rows.append(rows)
    return col4row.astype(np.int32), v, rounds, scanned_rows
