"""The NumPy twins of the CUDA kernels that are not engines themselves: the readable specifications
the CPU tests run and the GPU tests compare against, kept out of the engines' production paths.

- :func:`reference_stack` is kernels/batch_lap.cu (engine ``cuda-batch``): shortest augmenting
  paths per problem (scipy's algorithm, Crouse 2016), same steps S1-S4, same tie-break, same duals,
  with Jonker-Volgenant's column reduction as the start of a square problem and a row reduction
  (each row at its row minimum, v = 0) as the start of a rectangular one;
- :func:`sap_twin` is engine ``cuda-sap``: the classical kernel's auction start
  (lapcli.engines.cpu.numpy_hungarian.auction_start), then :func:`reference_stack` from it;
- :func:`auction_twin` is kernels/auction.cu, engine ``cuda-sap`` on square point sets and on
  dense squares above the one-block search;
- :func:`hand_over` is how engine ``cuda-sap`` starts its searches from the auction's duals.

The twin of kernels/hungarian.cu is the ``numpy`` engine itself (lapcli.engines.cpu.numpy_hungarian).
"""

from __future__ import annotations

import numpy as np

from .engines.cpu.numpy_hungarian import auction_start
from .steps import AUCTION_PATIENCE, AUCTION_ROUNDS


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


def row_reduction(cost: np.ndarray) -> np.ndarray:
    """The kernel's start for a rectangular problem (n < m) without a warm start, v = 0: row i
    claims the column of its row minimum (lowest column on ties) and each column goes to the lowest
    row claiming it. Returns col_of_row, -1 for a free row (a row whose minimum is not finite
    claims nothing). For costs without NaN: the kernel orders a NaN past +inf where NumPy's argmin
    takes it, and a launch that met a NaN is solved again after its entries are checked, so the
    twin need not follow it there."""
    n = cost.shape[0]
    claim = cost.argmin(axis=1)
    owner = np.full(cost.shape[1], -1, dtype=np.int64)
    for i in range(n - 1, -1, -1):  # descending: the lowest row is written last
        if np.isfinite(cost[i, claim[i]]):
            owner[claim[i]] = i
    col_of_row = np.full(n, -1, dtype=np.int64)
    taken = np.flatnonzero(owner >= 0)
    col_of_row[owner[taken]] = taken
    return col_of_row


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
    inf = np.iinfo(np.int64).max if dual is np.int64 else np.inf
    columns = np.arange(m)
    if warm_start is not None:
        assert n == m, "a warm start needs square problems"
        v_all[:] = warm_start[0]
    for b in range(batch):
        c = costs[b].astype(dual)
        v = v_all[b]
        row4col = np.full(m, -1, dtype=np.int64)
        col4row = np.full(n, -1, dtype=np.int64)
        if warm_start is not None:
            col4row[:] = warm_start[1][b]
        elif reduction_start and n == m:
            v[:], col4row[:] = column_reduction(c)
        elif reduction_start:
            col4row[:] = row_reduction(c)
        row4col[col4row[col4row >= 0]] = np.flatnonzero(col4row >= 0)
        for root in np.flatnonzero(col4row < 0):
            spc = np.full(m, inf, dtype=dual)
            path = np.full(m, -1, dtype=np.int64)
            scanned = np.zeros(m, dtype=bool)
            i, ui, min_val, sink = root, dual(0), dual(0), -1
            while sink < 0:
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
            j = sink
            while True:  # S4
                i = path[j]
                row4col[j] = i
                col4row[i], j = j, col4row[i]
                if i == root:
                    break
        col_of_row[b] = col4row
        u[b] = c[np.arange(n), col4row] - v[col4row]
    return col_of_row, u, v_all, status


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


def auction_twin(cost: np.ndarray, final_eps: float, scaling: float | None = None, max_bids: int = 10**6,
                 least_first_eps: float = 0.0, max_chain: int = 0, tail_rows: int = 0,
                 last_tail_to_searches: bool = False, floor: bool = True, block_threads: int = 0):
    """kernels/auction.cu (lapcli.cuda.auction, cuda-sap's square point problems) on a dense n × n
    float matrix, its bids one at a time (a warp's eviction chain run to its end; the kernel runs
    thousands at once, in an order no one fixes): the same candidates (each lane's AUCTION_NEAR
    cheapest of columns lane, lane + 32, …, and up to 32 more the release pass adds, in turn), the
    same first ε (a quarter of the median row's candidate spread, at least ``least_first_eps``:
    1 for integer costs, as engine ``cuda-sap`` runs it), the same release rule (free,
    or more than 2ε above the row's best over all columns, checked for every row at a phase's
    start and then for the rows that bid since), the same bids of a row past DENSE_AFTER bids in a
    phase: the candidates where the row's floor proves their best the row's best (each proof checked
    here against a full scan), else a full scan, whose lanes' bests become the row's found-later
    candidates and whose lanes' second bests' least its floor (a warp a row: kernels/auction.cu's
    auction_bid; with ``block_threads``, auction_bid_blocks' rule for a block of that many threads:
    each warp's best a candidate, the floor the least of the threads' reduced costs but those; ``floor``
    False: every such bid a full scan whose best becomes a candidate, the rule before the floor, to
    compare), and the same chain limit
    (``max_chain``, ``tail_rows``, ``last_tail_to_searches``: lapcli.cuda.auction.solve's). Returns
    (col_of_row, v, phases); phases lists (ε, rounds, bids, rows left free, bids that scanned
    every column, bids past DENSE_AFTER that the floor proved). Every reduced cost of
    u = c − v on the assignment is ≥ −2·final_eps, unless the last phase left rows free (−1) to the
    searches. Raises RuntimeError past ``max_bids`` bids in a phase (the kernel would be bidding on
    past it)."""
    from .cuda import auction

    n = cost.shape[0]
    near = auction.NEAR
    candidates = []
    for i in range(n):
        row = []
        for lane in range(32):
            columns = np.arange(lane, n, 32)
            row.extend(columns[np.argsort(cost[i, columns], kind="stable")[:near]].tolist())
        candidates.append(row)
    spread = np.median([np.ptp(cost[i, candidates[i]]) for i in range(n)])
    # the 32 found-later slots (-1: empty): the release pass fills slot count % 32 (the kernel's
    # added[i]++ & 31), a full scan with a floor slot l with lane l's best
    later = np.full((n, 32), -1)
    filled = np.zeros(n, dtype=np.int64)

    def add_later(i: int, column: int) -> None:
        later[i, filled[i] % 32] = column
        filled[i] += 1

    floor_of = np.full(n, -np.inf)  # kernels/auction.cu's floor: none before a row's first full scan
    v = np.zeros(n)
    owner = np.full(n, -1)
    col_of_row = np.full(n, -1)
    phases = []
    epsilons = auction.schedule(max(spread * auction.FIRST_EPS_OF_SPREAD, least_first_eps), final_eps,
                                scaling if scaling is not None else auction.SCALING)
    for index, eps in enumerate(epsilons):
        rounds = bids = left_free = full_scans = proved = 0
        last_phase = index == len(epsilons) - 1
        row_bids = np.zeros(n, dtype=np.int64)
        fresh = np.ones(n, dtype=bool)
        while True:
            free = []
            for i in range(n):
                if col_of_row[i] >= 0 and not fresh[i]:
                    continue
                reduced = cost[i] - v
                best = int(np.argmin(reduced))
                if col_of_row[i] >= 0 and not reduced[col_of_row[i]] > reduced[best] + 2 * eps:
                    fresh[i] = False
                    continue
                if col_of_row[i] >= 0:
                    owner[col_of_row[i]] = col_of_row[i] = -1
                    if best not in candidates[i] and best not in later[i]:
                        add_later(i, best)
                        floor_of[i] = -np.inf
                free.append(i)
            if not free:
                break
            rounds += 1
            parked = 0
            for row in free:
                chain = 0
                while row >= 0:
                    if max_chain and chain >= max_chain:  # the row stays free
                        parked += 1
                        break
                    chain += 1
                    row_bids[row] += 1
                    past = row_bids[row] > auction.DENSE_AFTER
                    dense = past and not floor
                    j, second = _auction_best(cost[row], v, np.array(candidates[row] + [j for j in later[row] if j >= 0]))
                    if past and floor:
                        dense = not (cost[row, j] - v[j] <= floor_of[row])
                        second = min(second, floor_of[row])
                        whole = _auction_best(cost[row], v, np.arange(n))
                        if not dense and not (cost[row, j] - v[j] == cost[row, whole[0]] - v[whole[0]]
                                              and second <= whole[1]):  # the floor's promise, checked
                            raise RuntimeError(f"row {row}'s floor proved a bid no full scan allows")
                    proved += past and not dense
                    if dense:
                        full_scans += 1
                        j, second = _auction_best(cost[row], v, np.arange(n))
                        if not floor and j not in candidates[row] and j not in later[row]:
                            add_later(row, j)
                    if dense and floor:
                        bests, floor_of[row] = _floor_of_a_full_scan(cost[row] - v, block_threads)
                        later[row] = [-1 if jb in candidates[row] else jb for jb in bests]
                    v[j] = (cost[row, j] - second if np.isfinite(second) else v[j]) - eps
                    fresh[row] = True
                    row, owner[j] = int(owner[j]), row
                    col_of_row[owner[j]] = j
                    if row >= 0:
                        col_of_row[row] = -1
                    bids += 1
                    if bids > max_bids:
                        raise RuntimeError(f"the auction bid {bids} times in the phase of eps {eps}")
            if parked and parked <= tail_rows and (not last_phase or last_tail_to_searches):
                left_free = parked
                break
        phases.append((eps, rounds, bids, left_free, full_scans, proved))
    return col_of_row, v, phases


def _floor_of_a_full_scan(reduced: np.ndarray, block_threads: int = 0) -> tuple[np.ndarray, float]:
    """A full scan's found-later candidates (32 columns, −1: none) and floor (kernels/auction.cu).
    A warp a row (``block_threads`` 0): lane l scans columns l, l + 32, …; its best (the lowest
    column on ties) becomes slot l, and the floor is the least of the lanes' second bests. A block:
    thread t scans t, t + block_threads, …; each warp's best becomes its slot, and the floor is the
    least of every thread's best, or its second best where its best is its warp's."""
    width = block_threads or 32
    n = len(reduced)
    grid = np.full((-(-n // width), width), np.inf)  # [k, t]: column t + width·k
    grid.flat[:n] = reduced
    firsts = grid.argmin(axis=0)  # each thread's best: argmin takes the lowest k, the lowest column
    columns = np.arange(width)
    best = grid[firsts, columns]
    grid[firsts, columns] = np.inf
    second = grid.min(axis=0)
    best_column = np.where(columns < n, columns + width * firsts, n)  # n: a thread with no column
    if not block_threads:
        return np.where(best_column < n, best_column, -1), float(second.min())
    warp_of = columns // 32
    slots = np.full(32, -1)
    left_out = best.copy()
    for w in range(width // 32):
        threads = np.flatnonzero(warp_of == w)
        holder = threads[np.lexsort((best_column[threads], best[threads]))[0]]
        if best_column[holder] < n:
            slots[w] = best_column[holder]
        left_out[holder] = second[holder]
    return slots, float(left_out.min())


def _auction_best(costs: np.ndarray, v: np.ndarray, scanned: np.ndarray) -> tuple[int, float]:
    """A bid's scan of ``scanned`` columns: (the lowest column of least c − v, the second least
    value, inf for one column)."""
    reduced = costs[scanned] - v[scanned]
    order = np.lexsort((scanned, reduced))
    return int(scanned[order[0]]), float(reduced[order[1]]) if len(order) > 1 else np.inf


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
    from .cuda import sap_rounds

    rows_a_round = rows_a_round or sap_rounds.ROUND_ROWS
    narrow_above = rows_a_round * sap_rounds.NARROW_ABOVE // sap_rounds.ROUND_ROWS
    widen_below = rows_a_round * sap_rounds.WIDEN_BELOW // sap_rounds.ROUND_ROWS
    c = np.asarray(cost, dtype=np.float64)
    n, m = c.shape
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
        j, walked = sink, 0
        while True:  # S4
            i = path[j]
            row4col[j] = i
            col4row[i], j = j, col4row[i]
            walked += 1
            if i == root:
                break
            if walked > n:
                raise RuntimeError("the augmenting walk found a cycle")
        rounds.append(count)
        scanned_rows.append(rows)
    return col4row.astype(np.int32), v, rounds, scanned_rows
