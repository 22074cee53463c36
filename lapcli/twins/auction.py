"""The NumPy twin of kernels/auction.cu (lapcli.cuda.auction): Bertsekas' ε-scaling auction with
its candidates, floors, release passes and chain limit, its bids one at a time."""

from __future__ import annotations

import numpy as np


def auction_twin(cost: np.ndarray, final_eps: float, scaling: float | None = None, max_bids: int = 10**6,
                 least_first_eps: float = 0.0, max_chain: int = 0, tail_rows: int = 0,
                 last_tail_to_searches: bool = False, floor: bool = True, stalled_tail: bool = False,
                 defer_wars: bool = False, coarse_first: float = 0.0, v_start: np.ndarray | None = None):
    """kernels/auction.cu (lapcli.cuda.auction, cuda-sap's square point problems) on a dense n × n
    float matrix, its bids one at a time (a warp's eviction chain run to its end; the kernel runs
    thousands at once, in an order no one fixes): the same candidates (each lane's AUCTION_NEAR
    cheapest of columns lane, lane + 32, …, ties to the first met from column i on:
    :func:`near_columns`; and up to 32 more the release pass adds, in turn; a full scan refills all
    of them), the
    same first ε (a quarter of the median row's candidate spread, at least ``least_first_eps``:
    1 for integer costs, as engine ``cuda-sap`` runs it), the same release rule (free,
    or more than 2ε above the row's best over all columns, checked for every row at a phase's
    start and then for the rows that bid since), the same bids of a row past DENSE_AFTER bids in a
    phase: the candidates where the row's floor proves their best the row's best (each proof checked
    here against a full scan), else a full scan, which refills all of the row's candidates with each
    lane's NEAR + 1 least reduced costs and leaves the least of the lanes' next ones its floor
    (kernels/auction.cu's auction_bid, and
    auction_bid_blocks, whose block gives the same; ``floor`` False: every such bid a full scan
    whose best becomes a candidate, the rule before the floor, to compare), and the same chain limit
    (``max_chain``, ``tail_rows``, ``last_tail_to_searches``, ``stalled_tail``, ``defer_wars``,
    ``coarse_first``: lapcli.cuda.auction.solve's, its phases ended and its price wars' rows deferred
    by the same lapcli.cuda.auction.round_ends_phase, a coarse first phase in chains of
    COARSE_CHAIN ended only by its tail rule at COARSE_TAIL_ROWS; ``v_start``: the columns' first
    duals, as the point auction's warm start gives them, else 0). Returns
    (col_of_row, v, phases); phases lists (ε, rounds, bids, rows left free, bids that scanned
    every column, bids past DENSE_AFTER that the floor proved, rows its price war deferred). Every
    reduced cost of u = c − v on the assignment is ≥ −2·final_eps, unless rows were left free (−1)
    to the searches. Raises RuntimeError past ``max_bids`` bids in a phase (the kernel would be
    bidding on past it)."""
    from ..cuda import auction

    n, near = cost.shape[0], auction.NEAR
    candidates = [[j for lane in near_columns(cost[i], i) for j in lane if j >= 0] for i in range(n)]
    spread = np.median([np.ptp(cost[i, candidates[i]]) for i in range(n)])
    # the 32 found-later slots (-1: empty): the release pass fills slot count % 32 (the kernel's
    # added[i]++ & 31); a full scan refills them with the near slots (_refill_of_a_full_scan)
    later = np.full((n, 32), -1)
    filled = np.zeros(n, dtype=np.int64)

    def add_later(i: int, column: int) -> None:
        later[i, filled[i] % 32] = column
        filled[i] += 1

    floor_of = np.full(n, -np.inf)  # kernels/auction.cu's floor: none before a row's first full scan
    v = np.zeros(n) if v_start is None else np.array(v_start, dtype=np.float64)
    owner = np.full(n, -1)
    col_of_row = np.full(n, -1)
    deferred = np.zeros(n, dtype=bool)  # rows a price war left to the searches: no release pass lists them
    phases = []
    epsilons = auction.schedule(auction.first_eps_of(spread, least_first_eps, coarse_first), final_eps,
                                scaling if scaling is not None else auction.SCALING)
    for index, eps in enumerate(epsilons):
        rounds = bids = left_free = full_scans = proved = deferred_in_phase = 0
        parked_last_round = n + 1  # the first round has none before it
        last_phase = index == len(epsilons) - 1
        open_phase = coarse_first and index == 0 and not last_phase  # the coarse first phase
        chain_limit = auction.COARSE_CHAIN if open_phase else max_chain
        row_bids = np.zeros(n, dtype=np.int64)
        fresh = np.ones(n, dtype=bool)
        while True:
            free = []
            for i in range(n):
                if deferred[i] or (col_of_row[i] >= 0 and not fresh[i]):
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
                    if chain_limit and chain >= chain_limit:  # the row stays free
                        parked += 1
                        break
                    chain += 1
                    row_bids[row] += 1
                    past = row_bids[row] > auction.DENSE_AFTER
                    scanned = np.concatenate([candidates[row], later[row]]).astype(np.int64)
                    scanned = scanned[scanned >= 0]
                    j, second = _auction_best(cost[row], v, scanned)
                    whole = _auction_best(cost[row], v, np.arange(n)) if past else None  # a full scan
                    dense = past and not (floor and cost[row, j] - v[j] <= floor_of[row])
                    if past and not dense:  # proved: the floor's promise, checked against the full scan
                        second = min(second, floor_of[row])
                        if not (cost[row, j] - v[j] == cost[row, whole[0]] - v[whole[0]] and second <= whole[1]):
                            raise RuntimeError(f"row {row}'s floor proved a bid no full scan allows")
                        proved += 1
                    if dense:
                        full_scans += 1
                        j, second = whole
                        if not floor and j not in candidates[row] and j not in later[row]:
                            add_later(row, j)
                    if dense and floor:
                        slots, floor_of[row] = _refill_of_a_full_scan(cost[row] - v, near + 1)
                        candidates[row], later[row] = slots[:32 * near].tolist(), slots[32 * near:]
                    v[j] = (cost[row, j] - second if np.isfinite(second) else v[j]) - eps
                    fresh[row] = True
                    row, owner[j] = int(owner[j]), row
                    col_of_row[owner[j]] = j
                    if row >= 0:
                        col_of_row[row] = -1
                    bids += 1
                    if bids > max_bids:
                        raise RuntimeError(f"the auction bid {bids} times in the phase of eps {eps}")
            ends, war = auction.round_ends_phase(parked, parked_last_round, last_phase, tail_rows=tail_rows,
                                                 stalled_tail=stalled_tail, defer_wars=defer_wars,
                                                 last_tail_to_searches=last_tail_to_searches, coarse=open_phase)
            parked_last_round = parked
            if war:  # the rows it left free bid no more
                deferred_in_phase = int(((col_of_row < 0) & ~deferred).sum())
                deferred |= col_of_row < 0
            if ends:
                left_free = parked
                break
        phases.append((eps, rounds, bids, left_free, full_scans, proved, deferred_in_phase))
    return col_of_row, v, phases


def _refill_of_a_full_scan(reduced: np.ndarray, slots: int) -> tuple[np.ndarray, float]:
    """A full scan's refill of a row's candidates and its floor (kernels/auction.cu): lane l scans
    columns l, l + 32, …; its ``slots`` least reduced costs' columns (the lowest column first on
    ties; −1 where the lane has fewer finite ones) fill slots l, 32 + l, …, and the floor is the
    least of the lanes' next ones (inf: none)."""
    n = len(reduced)
    grid = np.full((-(-n // 32), 32), np.inf)  # [k, lane]: column lane + 32·k
    grid.flat[:n] = reduced
    order = np.argsort(grid, axis=0, kind="stable")  # each lane ascending, the lowest k first on ties
    lanes = np.arange(32)
    kept = order[:slots]  # [s, lane]: the lane's s-th least
    refill = np.where(np.isfinite(grid[kept, lanes]), lanes + 32 * kept, -1)
    if len(kept) < slots:  # fewer than ``slots`` columns a lane
        refill = np.vstack([refill, np.full((slots - len(kept), 32), -1)])
    floor = float(grid[order[slots], lanes].min()) if len(order) > slots else np.inf
    return refill.reshape(-1), floor


def _auction_best(costs: np.ndarray, v: np.ndarray, scanned: np.ndarray) -> tuple[int, float]:
    """A bid's scan of ``scanned`` columns: (the lowest column of least c − v, the second least
    value, inf for one column)."""
    reduced = costs[scanned] - v[scanned]
    order = np.lexsort((scanned, reduced))
    return int(scanned[order[0]]), float(reduced[order[1]]) if len(order) > 1 else np.inf


def near_columns(costs: np.ndarray, i: int) -> np.ndarray:
    """kernels/auction.cu's auction_candidates for row i of costs ``costs`` (over the n columns):
    (32, NEAR) columns, lane l's NEAR cheapest among columns l, l + 32, …, ascending,
    ties to the first met, the lane meeting its columns from column i on and wrapping (−1: none
    left). The kernel's slot s·32 + l holds [l, s]."""
    from ..cuda import auction

    n, near = costs.size, auction.NEAR
    slots = np.full((32, near), -1)
    for lane in range(32):
        columns = np.arange(lane, n, 32)
        columns = columns[np.argsort((columns - i) % n, kind="stable")]  # from column i on, wrapping
        kept = columns[np.argsort(costs[columns], kind="stable")[:near]]
        slots[lane, :kept.size] = kept
    return slots
