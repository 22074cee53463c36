"""The starts of engine ``cuda-sap``'s searches: what leaves few rows free and the others' paths
short, so that the shortest augmenting paths (kernels/batch_lap.cu, kernels/sap.cu) have little
left to do.

- up to lapcli.engines.cuda.sap.ONE_BLOCK_UP_TO columns: Jonker–Volgenant's augmenting row
  reduction as parallel rounds (kernels/hungarian.cu with ``start_only``; :func:`launch_auction`);
- above: Bertsekas' auction with ε-scaling on the dense work matrix (kernels/auction.cu through
  lapcli.cuda.auction; :func:`scaled_auction`), whose duals are handed over to the searches
  (:meth:`ScaledAuction.hand_over`, the NumPy twin lapcli.twins.hand_over);
- without either (``auction_rounds=0``, small floats): the column reduction
  (:func:`column_reduction_start`, the twin lapcli.twins.column_reduction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...cuda import auction, passes
from ...cuda.hungarian import DeviceState, prepare_launch, start_solve
from ...cuda.hungarian_abi import BLOCK_SIZE, BLOCKS_PER_SM
from ...cuda.hungarian_abi import STATUS_MESSAGES as KERNEL_MESSAGES
from ...cuda.runtime import Event, load
from ...errors import SolverError

# The ε-scaling auction (a square point problem; a dense float square above ONE_BLOCK_UP_TO) ends at
# this fraction of the certificate's tolerance, so that its slackness (every reduced cost ≥ −2ε)
# passes the certificate with room for rounding.
AUCTION_EPS_OF_TOLERANCE = 0.125
# A dense integer square ends it at this over n: the 2ε-slackness of n pairs then sums below one
# half, so its assignment is optimal, and its duals floored leave almost every row exactly tight.
INTEGER_FINAL_EPS_TIMES_N = 0.25
# The auction's time on a square (dense, or a point set's: lapcli.engines.cuda.sap_points): this
# much a row, at least AUCTION_BUDGET_MIN_S. Where it has not finished by then (prices that must
# move far in small steps: maximised distances, clusters, costs tied over many columns), its duals
# as they are start the searches, which are exact from any duals.
AUCTION_BUDGET_PER_ROW_S = 1e-4
AUCTION_BUDGET_MIN_S = 0.5
# ε falls by this factor a phase (the point auction's is lapcli.cuda.auction.SCALING, 16): on an
# H100, integer distances at 8192 took 174–334 ms with 8 against 163–636 with 16, float64 ones
# 182–262 against 230–440.
AUCTION_SCALING = 8.0
# A phase's last few free rows wage a price war that one warp bids out alone, each bid waiting on
# the last (chains of 100,000 bids and more, 0.3 s, at 8192). A chain of chain_limit(n) bids leaves
# its row free; a round that leaves at most AUCTION_TAIL_ROWS rows so ends the phase, they bid again
# in the next one, and the last phase's are the searches' (exact from any duals). A float square's
# hand-over keeps every row within the last phase's 2ε of its minimum and lowers that pair's cost to
# it (ScaledAuction.hand_over): the searches take only the tail. H100, host -> host ms, medians of
# three matrices, chains of 256 / 512 / 1024 / 2048 bids: float64 squared distances at 2048 27 / 30
# / 42 / 67, at 4096 75 / 54 / 61 / 80; integer ones at 4096 66 / 42 / 47 / 64; chains of 512 /
# 1024 / 2048 / 4096 at 8192 145 / 121 / 134 / 181 (float64), 141 / 106 / 119 / 141 (integers), at
# 16384 524 / 515 / 352 / 328 (float64). Bidding to the end instead (H200, float64 squared
# distances): 366 against 128 ms at 8192, 548 against 299 at 16384.
AUCTION_CHAIN_DIVISOR = 8
AUCTION_MIN_CHAIN = 256
AUCTION_TAIL_ROWS = 64


def auction_budget(n: int) -> float:
    """The seconds the auction of an n × n square bids before the searches take over."""
    return max(AUCTION_BUDGET_MIN_S, AUCTION_BUDGET_PER_ROW_S * n)


def chain_limit(n: int) -> int:
    """The bids an eviction chain may make on an n × n square before its row is left free."""
    return max(AUCTION_MIN_CHAIN, n // AUCTION_CHAIN_DIVISOR)


def uses_scaled_auction(work) -> bool:
    """Whether the square work matrix starts from the ε-scaling auction: floats of AUCTION_FROM
    columns or more (below, its last ε would be a few ulps of the duals), integers narrow enough for
    its float64 arithmetic to resolve an ε of 1/(4n) (n·max|c| below AUCTION_INTEGER_SPAN)."""
    n = work.values.shape[0]
    if n < 2:
        return False
    if not work.exact:
        return n >= auction.AUCTION_FROM
    largest = max(int(work.values.max()), -int(work.values.min()))  # no n² temporary of abs()
    return n * largest < auction.AUCTION_INTEGER_SPAN


@dataclass
class ScaledAuction:
    """The ε-scaling auction's result on a dense work matrix, with what its hand-over needs."""

    result: Any  # lapcli.cuda.auction.AuctionResult
    kernels: dict
    source: tuple
    exact: bool
    compile_ms: float
    final_eps: float

    @property
    def complete(self) -> bool:
        return self.result.complete

    def details(self) -> dict:
        return {**self.result.details(), "launches": self.result.launches}

    def hand_over(self, values) -> SearchStart:
        """The searches' start on the work matrix ``values``: v floored for integers (every
        comparison of the searches is then in integers), each row kept where its column is a
        minimum of c − v over the row (kernels/passes.cu's row_min, the same arithmetic as the
        searches'), the others free (lapcli.twins.hand_over).

        Integers, and floats the auction stopped before its last phase, keep a row only where it
        is exactly tight. The float tail the chain limit left keeps every row within the last
        phase's 2ε of its minimum (an auction leaves almost no float row exactly tight), and its
        pair's cost is lowered to that minimum in the matrix the searches read: they are then
        exact on it, its reduced costs bound the true ones from below, so their duals are feasible
        for the true costs and each kept pair ends ≤ 2ε from tight, inside the certificate's
        tolerance. The lowering is done in ``values`` itself (float64; restored by
        SearchStart.restore once the searches and u = c − v on it are done) or in a float64 copy
        of a float32 matrix, whose ulps are far coarser than 2ε; without the room for that copy,
        only exactly tight rows are kept."""
        import cupy

        from ...cuda.hungarian import free_device_bytes

        n = self.result.v.shape[0]
        v = cupy.floor(self.result.v) if self.exact else self.result.v
        col = self.result.col_of_row
        slack = 2 * self.result.eps if not self.exact and self.result.eps <= self.final_eps else 0.0
        if slack and values.dtype != np.float64 and 8 * n * n > free_device_bytes():
            slack = 0.0
        minima, _, gap, tight = kept_pairs(self.kernels, self.source, n, v, col, slack)
        start = SearchStart(v.astype(np.int64) if self.exact else v, cupy.where(tight, col, -1).astype(np.int32),
                            values)
        if slack:
            if values.dtype != np.float64:
                start.values = values.astype(np.float64)
            rows = cupy.flatnonzero(tight & cupy.greater(gap, 0))
            cols = col[rows]
            start.lowered = (rows, cols, start.values[rows, cols])
            start.values[rows, cols] = minima[rows] + v[cols]
        return start


def kept_pairs(kernel_set: dict, source: tuple, n: int, v, col, slack: float) -> tuple:
    """The hand-over's rule (lapcli.twins.hand_over) on any n × n cost source: each row's minimum of
    c − v over all columns (one streamed pass), the column it holds (0 where free), its pair's gap
    above that minimum, and whether it keeps the pair (assigned, gap ≤ ``slack``): (minima, held,
    gap, kept), CuPy arrays."""
    import cupy

    minima, _ = passes.row_min(kernel_set, source, n, n, v)
    assigned = cupy.greater_equal(col, 0)  # (ufuncs, not operators: tests/test_cupy_imports_gpu.py)
    held = cupy.where(assigned, col, 0)  # a free row reads column 0, and is not kept
    gap = passes.pair_costs(kernel_set, source, n, held) - v[held] - minima
    return minima, held, gap, assigned & cupy.less_equal(gap, slack)


@dataclass
class SearchStart:
    """Where the searches start: v, col_of_row (−1: free) and the matrix they read (the work
    matrix, or a float64 copy of it), with the pairs the hand-over lowered in it."""

    v: Any
    col_of_row: Any
    values: Any
    lowered: tuple | None = None  # (rows, cols, true costs)

    @property
    def lowered_pairs(self) -> int:
        return 0 if self.lowered is None else int(self.lowered[0].size)

    def restore(self) -> None:
        """The true costs back in the matrix (the work matrix the certificate reads)."""
        if self.lowered is not None:
            rows, cols, costs = self.lowered
            self.values[rows, cols] = costs


def scaled_auction(work, timeout: float | None) -> ScaledAuction:
    """lapcli.cuda.auction on the dense work matrix, down to an ε below the certificate's
    tolerance (floats: its answer is then certified as it is) or to 1/(4n) (integers: optimal,
    and the floored duals make the searches' start), stopped after its budget."""
    n = work.values.shape[0]
    kernels, compile_ms = load(auction.dense_program(work.dtype))
    source = auction.dense_source(work.values)
    final_eps = INTEGER_FINAL_EPS_TIMES_N / n if work.exact else work.eps * AUCTION_EPS_OF_TOLERANCE
    budget = auction_budget(n)
    result = auction.solve(kernels, source, n, final_eps, timeout=timeout, budget=budget,
                           least_first_eps=1.0 if work.exact else 0.0, scaling=AUCTION_SCALING,
                           max_chain=chain_limit(n), tail_rows=AUCTION_TAIL_ROWS, last_tail_to_searches=True)
    return ScaledAuction(result, kernels, source, work.exact, compile_ms, final_eps)


def column_reduction_start(values):
    """(v, col_of_row int32) of Jonker–Volgenant's column reduction on the device: v[j] the
    column's minimum, each row that is some column's lowest minimum takes the lowest such column
    (lapcli.twins.column_reduction)."""
    return values.min(axis=0), rows_take_lowest_column(values.argmin(axis=0), values.shape[0])


def rows_take_lowest_column(lowest_row, size: int):
    """col_of_row (int32 CuPy, −1 free) of the column reduction: each column names its lowest
    row, and each row so named takes the lowest of its columns."""
    import cupy

    col_of_row = cupy.full(size, size, dtype=np.int32)
    cupy.minimum.at(col_of_row, lowest_row, cupy.arange(size, dtype=np.int32))
    col_of_row[cupy.equal(col_of_row, size)] = -1
    return col_of_row


class Auction:
    """The launched auction (kernels/hungarian.cu with start_only): its device state, until read."""

    def __init__(self, state, plan, compile_ms: float, events: tuple):
        self.state, self.plan, self.compile_ms, self.events = state, plan, compile_ms, events

    def finish(self) -> tuple[int, float, int]:
        """(rounds run, the kernel's clock of them in ms, rows it left free) in one copy back;
        raises on a bad status word."""
        host = self.state.to_host("step_ns", "step_count", "status", "column_of_star_at_row")
        status_word = int(host["status"][0])
        if status_word != 0:
            raise SolverError(KERNEL_MESSAGES.get(status_word, f"the auction kernel ended with status {status_word}"))
        free_rows = int((host["column_of_star_at_row"] < 0).sum())
        return int(host["step_count"][0]), float(host["step_ns"][1]) / 1e6, free_rows


def launch_auction(problem, work, timeout, rounds: int, patience: int, stream: int) -> Auction:
    """Launch the cooperative kernel's step 1 (the auction) on the work matrix; nothing waits."""
    kernels, dtype, plan, compile_ms = prepare_launch(problem, work, False, BLOCK_SIZE, BLOCKS_PER_SM)
    state = DeviceState(work.values, problem.size, plan, dtype, work.eps, timeout, auction_rounds=rounds,
                        start_only=True, auction_patience=patience, stream=stream)
    begin, end = Event(), Event()
    begin.record(stream)
    start_solve(kernels["hungarian"], plan, state)
    end.record(stream)
    return Auction(state, plan, compile_ms, (begin, end))
