"""The launcher of kernels/auction.cu: an n × n problem (minimise) by Bertsekas' auction with
ε-scaling, on any cost source of kernels/costs.cuh. It returns an assignment and column duals v
with 2ε-complementary slackness over all n² pairs for the last ε, so that u = c − v on the
assignment makes every reduced cost ≥ −2ε: the certificate's duals, with ε set below its tolerance.

Why: a shortest-path search is a sequence of dependent steps, its time their number times a
step's latency; an auction phase is thousands of independent bids at once, and ε-scaling
(Bertsekas 1988; Guthe–Thuerck 2021) starts each phase from the last one's duals. A bid reads only
the row's 160 candidate columns (its near columns by cost, and those a release pass found
missing). Point sets: costs from the coordinates, O(n·d) plus 640 bytes a row; a full scan reads
only the tiles of columns that may cost less than its threshold (lapcli.cuda.auction_tiles).

``auction_candidates`` picks each row's near columns once. A phase is rounds of: the release
pass (lapcli.cuda.auction_release) lists the rows free or more than 2ε above their best over all
columns (all n² pairs at a phase's start, then the rows that bid since), then ``auction_bid`` runs
until every listed row, and every row a bid evicts, holds a column (a warp a row; a block a row in
a point set's round of at most BLOCK_ROWS_UP_TO rows). A row past DENSE_AFTER bids in a phase
scans all columns where the floor of its last full scan cannot prove its candidates' best the
row's best. The phase ends when a release pass lists no row: its guarantee holds over all columns.

The same kernels run on a dense work matrix (:func:`dense_program`, engine ``cuda-sap`` above the
one-block search's columns). A ``budget`` stops the auction where it is (``complete`` False): its
duals, whatever they are, start the exact searches (lapcli.engines.cuda.sap), so a slow auction
costs at most its budget. A chain limit (``max_chain``) does the same for a phase's last free rows
(a price war one warp bids out alone): they bid again in the next phase, after the last one the
searches take them. Where those rows are many and grow (``defer_wars``, :func:`tail_wages_war`), a
region's surplus wages a war: the phase ends and its rows bid no more (DEFERRED in ``fresh``); the
searches take them too. ``coarse_first`` bids such surpluses out first, in one phase at a coarse ε
(that many times the first; COARSE_FIRST), until its last few rows stall (COARSE_TAIL_ROWS).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from ..errors import SolverError
from . import auction_release, auction_tiles, passes
from .auction_tiles import NO_TILES
from .runtime import Program, current_gpu, current_stream, reused_events
from .sap_cluster import kernel_text

# Square point problems of this many points or more go to the auction (engine cuda-sap), smaller
# ones to the searches from the column reduction: the auction's last ε is a fraction of the
# tolerance n·C·2^-50, which below a few hundred points is only a few ulps of the duals.
AUCTION_FROM = 1024
THREADS = 256  # 8 warps a block, one row a warp
PASS_ARGUMENTS = "ppqddi"  # the source's five arguments (kernels/costs.cuh) and n
NEAR = 4  # near-column slots a lane: 128 near columns a row
CANDIDATES = 32 * (NEAR + 1)  # and a slot a lane for columns found later: 160
DEFERRED = 2  # fresh[row] of a row a price war left to the searches (0, 1: "scan it again" or not)
CANDIDATES_SIGNATURE = PASS_ARGUMENTS + "pp"
RELEASE_SIGNATURE = PASS_ARGUMENTS + "ppppdpppp"
BID_SIGNATURE = PASS_ARGUMENTS + "ppppipdqqppppppi"  # and the tiles (auction_tiles)
SCALING = 16.0  # ε falls by this factor each phase
# The first phase's ε, as a fraction of the median row's cost spread over its candidates (far
# larger, the near columns' prices pass the far ones in a few bids and the bests leave them).
FIRST_EPS_OF_SPREAD = 0.25
# A row's bids in one phase after which its bids scan all columns: the way out when the candidates
# of the rows in play lack columns (32 at 65,536 uniform points: past 20 s, against 2.66 s; H100).
DENSE_AFTER = 256
# Past DENSE_AFTER, a row's bid reads its candidates first and scans all columns only where the
# floor its last full scan left cannot prove their best the row's best (kernels/auction.cu): a full
# scan costs n reads against 160 (65,536 cityblock points 4.3 -> 1.9 s; H100, docs/points.md).
# On point sets, a round that lists at most this many rows bids with a block a row (kernels/
# auction.cu's auction_bid_blocks): a phase's last rows bid in long chains, mostly dense, that one
# warp scans n / 128 latencies deep (65,536 cityblock points 10.8 -> 4.7 s; H100, docs/points.md).
# Dense matrices bid a warp a row (a block a row: 8.9 s against 0.5, 2,500 clustered cityblock).
BLOCK_ROWS_UP_TO = 1024
# the first a multiprocessor holds (at most kernels/auction.cu's AUCTION_BLOCK_MAX: its shared arrays)
BLOCK_THREADS = (512, 256)
# ``coarse_first`` (COARSE_FIRST; sap_points.coarse_factor): the first phase at that many times the
# first ε, chains of COARSE_CHAIN bids: a region's surplus moves far (~0.01-0.05 against ~5e-5) in
# few coarse steps. It ends only on the tail rule at COARSE_TAIL_ROWS rows, which bid on in the next
# phase (bid to the end, their war took past 40 s on five of seven clustered sets). Seven sets of
# 65,536 clustered points, H200, one call: chains of 256 took 1.40-2.15 s, 1,024 1.29-2.74 (wars
# inside three sets' chains), 512 1.40-2.89, 128 1.55-1.99; uniform 0.55-0.71 all.
COARSE_FIRST, COARSE_CHAIN, COARSE_TAIL_ROWS = 16.0, 256, 16

# Integer squares with n·max|c| below this take the auction (engine cuda-sap above its one-block
# search): float64 reduced costs resolve an ε of 1/(4n) by 64 ulps or more, floored duals exactly.
AUCTION_INTEGER_SPAN = 2**44
# A dense work matrix's element type -> its C++ type in the DenseRows source (kernels/costs.cuh).
DENSE_COST_TYPES = {"int32": "int", "int64": "long long", "float32": "float", "float64": "double"}


def kernel_defines() -> tuple[str, ...]:
    """kernels/auction.cu's numbers, set here only: the kernel refuses to compile without them."""
    return tuple(f"-DAUCTION_{name}={value}" for name, value in (
        ("NEAR", NEAR), ("DENSE_AFTER", DENSE_AFTER), ("DEFERRED", DEFERRED), ("TILES_MAX_DIM", auction_tiles.MAX_DIM)))


def kernel_source() -> str:
    """The cost sources, the streamed passes and the auction, in one text (point sets add the tiled
    release pass and the tiles' kernels: lapcli.cuda.points.program)."""
    return "\n".join(kernel_text(name) for name in ("costs.cuh", passes.FILE, "auction.cu"))


@lru_cache(maxsize=None)
def dense_program(dtype: str) -> Program:
    """The auction and both streamed passes on a dense work matrix of ``dtype`` (DENSE_COST_TYPES),
    reduced costs in float64; its source arguments are :func:`dense_source`'s."""
    source_type = f"DenseRows<{DENSE_COST_TYPES[dtype]}, double>"
    return Program("dense-auction", kernel_source(), kernel_defines(),
                   (*passes.kernels(source_type), *kernels(source_type)))


def dense_source(values) -> tuple:
    """The DenseRows source's five arguments for a C-contiguous square CuPy work matrix."""
    return (values.data.ptr, 0, values.shape[1], 0.0, 1.0)


def solves(n_rows: int, n_cols: int, maximize: bool) -> bool:
    """Whether engine cuda-sap gives a point problem to the auction: a square of AUCTION_FROM
    points or more, minimised (maximised, every row's best columns are the same few far points:
    1,024 uniform points did not finish in 3 minutes on an H100; the cluster searches take it)."""
    return n_rows == n_cols >= AUCTION_FROM and not maximize


def kernels(source_type: str) -> tuple[tuple[str, str, str], ...]:
    """(key, name expression, signature) of the auction's kernels on ``source_type``, for a Program."""
    return (("auction_candidates", f"auction_candidates<{source_type}>", CANDIDATES_SIGNATURE),
            ("auction_release", f"auction_release<{source_type}>", RELEASE_SIGNATURE),
            ("auction_bid", f"auction_bid<{source_type}>", BID_SIGNATURE),
            ("auction_bid_blocks", f"auction_bid_blocks<{source_type}>", BID_SIGNATURE),
            ("auction_rows_of_owners", "auction_rows_of_owners", "pip"))


@dataclass
class Phase:
    """One ε phase: its rounds (a release pass, then the bids), the rows they released (free or
    out of slackness), their bids, repeated scans, the longest chain of bids one warp made."""

    eps: float
    rounds: int
    released: int
    bids: int
    rescans: int
    longest_chain: int
    ms: float
    left_free: int = 0  # rows its chain limit left to the next phase (the last phase's: to the searches)
    # False: a snapshot after a round, the phase going on (``progress``); ``left_free``: rows free then
    ended: bool = True
    full_scans: int = 0  # bids that scanned all columns (an ended phase's)
    proved: int = 0  # bids past DENSE_AFTER that the row's floor proved from its candidates
    deferred: int = 0  # rows its price war left to the searches (``left_free`` of them), 0: none


@dataclass
class AuctionResult:
    """col_of_row (n,) int32 (−1: free) and v (n,) float64 on the device. ``complete``: every row
    assigned with 2ε-complementary slackness for ``eps``, the last phase's; else the budget stopped
    it during the phase of ``eps``, or the chain limit (its ``left_free``) or price wars (the phases'
    ``deferred``) left rows free for the searches: only v and the rows holding a column count."""

    col_of_row: Any
    v: Any
    eps: float
    phases: list[Phase] = field(default_factory=list)
    complete: bool = True
    launches: int = 0  # its kernel launches: the candidates, and each round's release pass, bids and owners
    budget_spent: bool = False  # its budget stopped it

    @property
    def bids(self) -> int:
        return sum(phase.bids for phase in self.phases)

    @property
    def ms(self) -> float:
        return sum(phase.ms for phase in self.phases)

    def details(self) -> dict:
        """What engine cuda-sap's report says of it."""
        return {"start": "epsilon-scaling auction", "auction_phases": len(self.phases), "auction_bids": self.bids,
                "auction_final_eps": self.eps, "auction_complete": self.complete,
                "auction_budget_spent": self.budget_spent, "auction_full_scans": sum(p.full_scans for p in self.phases),
                "auction_proved_bids": sum(phase.proved for phase in self.phases),
                "auction_left_free": self.phases[-1].left_free if self.phases else 0,
                "auction_deferred": sum(phase.deferred for phase in self.phases)}


def first_eps_of(spread: float, least: float, coarse_first: float) -> float:
    """The first phase's ε: FIRST_EPS_OF_SPREAD of the median row's candidate spread (``coarse_first``
    times it, 0: once), at least ``least``, at most float64's largest."""
    return max(min(spread * FIRST_EPS_OF_SPREAD * (coarse_first or 1.0), np.finfo(float).max), least)


def schedule(first_eps: float, final_eps: float, scaling: float = SCALING) -> list[float]:
    """The phases' ε: from ``first_eps`` down by ``scaling`` each phase, the last exactly
    ``final_eps``."""
    if not final_eps > 0 or not np.isfinite(first_eps):
        raise ValueError(f"need a positive final eps and a finite first one, got {first_eps}, {final_eps}")
    eps = max(first_eps, final_eps)
    phases = []
    while eps > final_eps:
        phases.append(eps)
        eps /= scaling
    phases.append(final_eps)
    return phases


def solve(kernel_set: dict, source: tuple, n: int, final_eps: float, *, timeout: float | None = None,
          budget: float | None = None, least_first_eps: float = 0.0, scaling: float = SCALING, max_chain: int = 0,
          progress: Callable[[Phase, int], None] | None = None, tail_rows: int = 0, stalled_tail: bool = False,
          last_tail_to_searches: bool = False, defer_wars: bool = False, block_rows_up_to: int = 0,
          coarse_first: float = 0.0, tiles: auction_tiles.ColumnTiles | None = None, v_start=None) -> AuctionResult:
    """Run the phases down to ``final_eps`` on the current device and stream; ``source`` is the
    cost source's five arguments. The first ε is :func:`first_eps_of`'s (``least_first_eps``:
    integer costs' 1, so that tied candidates do not start at the last ε). ``progress(phase,
    phases_left)`` is called after each round with the phase so far (``phase.ended`` False: its
    rows without a column in ``left_free``) and when the phase ends (True). Raises SolverError past
    ``timeout`` seconds (checked inside the bids and between rounds), saying where the auction
    stopped; past ``budget`` seconds (the first round's bids by the kernel's clock, the rest from
    the first round's end) returns the state as it is, ``complete`` False, its ``eps`` the phase's
    it stopped in (before a phase's first round: the phase before's).

    ``max_chain`` (0: none) ends a warp's eviction chain after that many bids, its row left free; a
    round that leaves at most ``tail_rows`` rows so ends the phase there, and they bid in the next
    phase's first round; after the last phase they are left to the searches (``complete`` False)
    when ``last_tail_to_searches``, else the last phase bids on until every row holds a column.
    ``stalled_tail``: only a round that leaves no fewer rows so than the round before ends the
    phase (while the rounds get rows through, the phase goes on). ``defer_wars``: a price war's
    rows bid no more, left to the searches (:func:`round_ends_phase`). A round of at most
    ``block_rows_up_to`` rows bids a block a row (0: a warp a row). ``coarse_first``: the coarse
    first phase's ε over the plain one (0: none). ``tiles``: the columns' (point sets'), by which
    full scans skip the columns that cost too much. ``v_start``: first column duals (CuPy; None: 0)."""
    import cupy

    gpu = current_gpu()
    stream = current_stream()
    columns = cupy.empty((n, 2), dtype=np.float64)  # (v, owner) a column: kernels/auction.cu's AuctionColumn
    columns[:, 0] = 0.0 if v_start is None else v_start
    owner = columns.view(np.int64)[:, 1]
    owner.fill(-1)
    col_of_row = cupy.full(n, -1, dtype=np.int32)
    free_rows = cupy.empty(n, dtype=np.int32)
    words = cupy.zeros(2, dtype=np.int32)  # free_count, next
    # kernels/auction.cu's auction_bid: its six counters, then its status (1: a limit stopped it), one copy a round
    counted = cupy.zeros(7, dtype=np.uint64)
    counters, status = counted[:6], counted[6:].view(np.int32)
    candidates = cupy.empty((n, CANDIDATES), dtype=np.int32)
    added = cupy.zeros(n, dtype=np.int32)
    row_bids = cupy.zeros(n, dtype=np.int32)
    spread = cupy.empty(n, dtype=np.float64)
    fresh = cupy.ones(n, dtype=np.uint8)  # rows the next release pass scans, or DEFERRED (kernels/auction.cu)
    floors = cupy.full(n, -np.inf)  # each row's floor (kernels/auction.cu): none before its first full scan
    bid, bid_blocks = kernel_set["auction_bid"], kernel_set["auction_bid_blocks"]
    release = auction_release.ReleasePass(kernel_set, source, n, gpu, stream, columns=columns, col_of_row=col_of_row,
                                          candidates=candidates, added=added, free_rows=free_rows, free_count=words,
                                          fresh=fresh, floors=floors)
    launches = 1  # the candidates

    def rows_of_owners() -> None:  # col_of_row as the columns' owners say
        nonlocal launches
        launches += 1
        col_of_row.fill(-1)
        kernel_set["auction_rows_of_owners"].launch(max(1, -(-n // THREADS)), THREADS,
                                                    (columns.data.ptr, n, col_of_row.data.ptr), stream=stream)

    warps_per_block = THREADS // 32
    row_blocks = max(1, -(-n // warps_per_block))
    resident = bid.resident_blocks(THREADS, 0) * gpu.sms
    # auction_bid_blocks' block: the widest a multiprocessor holds (many coordinates, many registers)
    block_threads = next((t for t in BLOCK_THREADS if bid_blocks.resident_blocks(t, 0)), 0) if block_rows_up_to else 0
    resident_rows = bid_blocks.resident_blocks(block_threads, 0) * gpu.sms if block_threads else 0
    began = time.perf_counter()
    begin, end = reused_events(cupy.cuda.runtime.getDevice(), "auction", 2)
    kernel_set["auction_candidates"].launch(row_blocks, THREADS, (*source, n, candidates.data.ptr, spread.data.ptr),
                                            stream=stream)
    epsilons = schedule(first_eps_of(float(np.median(spread.get())), least_first_eps, coarse_first), final_eps, scaling)
    phases, complete, budget_spent = [], True, False
    deferred_rows = 0  # rows the price wars left to the searches so far
    # The budget bounds the first round by the bid kernel's own clock, the rest by the host's from
    # its end: a fresh process compiles CuPy's kernels (the fills) in the first round.
    budget_began = None

    def stopped() -> SolverError:  # the time limit's error, saying where the auction was
        rows_of_owners()  # a stopped bid leaves its row free
        holding = int(np.count_nonzero(col_of_row.get() >= 0))  # on the host: lapcli.arrays.all_true
        return SolverError(f"the auction ran past its time limit in phase {index + 1} of {len(epsilons)} "
                           f"(eps {eps:.3g}), round {rounds}: {holding:,} of {n:,} rows held a column")

    for index, eps in enumerate(epsilons):
        begin.record(stream)
        phase_began = time.perf_counter()
        counters.fill(0)
        row_bids.fill(0)
        cupy.copyto(fresh, 1, where=cupy.not_equal(fresh, DEFERRED))  # a smaller eps: every row is scanned again
        rounds = released_in_phase = left_free = parked_so_far = deferred_in_phase = 0
        parked_last_round = n + 1  # the first round has none before it
        last_phase = index == len(epsilons) - 1
        open_phase = coarse_first and index == 0 and not last_phase  # the coarse first phase
        chain = COARSE_CHAIN if open_phase else max_chain
        while True:  # rounds until the release pass finds every row within eps over all columns
            now = time.perf_counter()  # the seconds left of the timeout and of the budget (None: no limit)
            left = None if not timeout else timeout - (now - began)
            spare = None if budget is None or budget_began is None else budget - (now - budget_began)
            if left is not None and left <= 0:
                raise stopped()
            if spare is not None and spare <= 0:
                complete, budget_spent = False, True
                break
            words.fill(0)
            tile_args = tiles.refreshed(columns, stream) if tiles else NO_TILES  # for the pass and the bids
            launches += release.run(eps, tile_args) + bool(tiles)
            released = int(words[0].get())
            if not released:
                break
            rounds += 1
            released_in_phase += released
            if released <= block_rows_up_to and block_threads:  # a block a row
                launch_bids, blocks, threads = bid_blocks, min(released, resident_rows), block_threads
            else:  # a warp a row
                launch_bids, blocks, threads = bid, max(1, min(resident, -(-released // warps_per_block))), THREADS
            spare = budget if budget_began is None else spare
            limits = [s for s in (left, spare) if s is not None]
            limit_ns = min(max(int(min(limits) * 1e9), 1), 2**63 - 1) if limits else 0  # 0: none
            launch_bids.launch(blocks, threads, (*source, n, columns.data.ptr, candidates.data.ptr,
                                                 row_bids.data.ptr, free_rows.data.ptr, released, words[1:].data.ptr,
                                                 eps, limit_ns, chain, counters.data.ptr, status.data.ptr,
                                                 fresh.data.ptr, floors.data.ptr, *tile_args),
                              stream=stream)
            launches += 1
            counts = counted.get()
            if counts[6]:  # the bids stopped at the nearer of the two limits
                if spare is None or (left is not None and left <= spare):
                    raise stopped()
                complete, budget_spent = False, True
                break
            budget_began = budget_began or time.perf_counter()
            bids, rescans, longest, parked_total = (int(x) for x in counts[:4])
            parked_before, parked_so_far = parked_so_far, parked_total if chain else 0
            parked = parked_so_far - parked_before  # rows this round's chain limit left free
            rows_of_owners()
            if progress is not None:  # the phase so far: every released row holds a column but the parked
                progress(Phase(eps, rounds, released_in_phase, bids, rescans, longest,
                               1e3 * (time.perf_counter() - phase_began), parked, ended=False),
                         len(epsilons) - index - 1)
            ends, war = round_ends_phase(parked, parked_last_round, last_phase, tail_rows=tail_rows,
                                         stalled_tail=stalled_tail, defer_wars=defer_wars,
                                         last_tail_to_searches=last_tail_to_searches, coarse=open_phase)
            parked_last_round = parked
            if war:  # its parked rows, the only free ones not deferred yet (every other listed row holds a column)
                cupy.copyto(fresh, DEFERRED, where=cupy.less(col_of_row, 0))
                deferred_in_phase, deferred_rows = parked, deferred_rows + parked
            if ends:
                left_free = parked
                complete = not last_phase
                break
        if budget_spent and not rounds and phases:  # stopped before the phase's first round: the last one's state
            eps = phases[-1].eps
        else:
            end.record(stream)
            bids, rescans, longest, _, full_scans, proved = (int(x) for x in counters.get())
            phases.append(Phase(eps, rounds, released_in_phase, bids, rescans, longest, end.ms_since(begin),
                                left_free, full_scans=full_scans, proved=proved, deferred=deferred_in_phase))
            if progress is not None:
                progress(phases[-1], len(epsilons) - index - 1)
        if not complete:
            rows_of_owners()  # a stopped bid leaves its row free, and so does a release
            return AuctionResult(col_of_row, cupy.ascontiguousarray(columns[:, 0]), eps, phases, complete=False,
                                 launches=launches, budget_spent=budget_spent)
    # v as a plain array (the passes after the auction take no stride); rows a war deferred are free
    return AuctionResult(col_of_row, cupy.ascontiguousarray(columns[:, 0]), epsilons[-1], phases,
                         complete=not deferred_rows, launches=launches)


def tail_ends_phase(parked: int, parked_before: int, tail_rows: int, stalled_tail: bool) -> bool:
    """Whether a round whose chain limit left ``parked`` rows free ends its phase (the rows bid
    again in the next phase; after the last, the searches take them): some and at most
    ``tail_rows``, and with ``stalled_tail`` no fewer than the round before left
    (``parked_before``: a phase's first round has none before it, n + 1), so that a phase goes on
    while its rounds get rows through."""
    return 0 < parked <= tail_rows and (not stalled_tail or parked >= parked_before)


def tail_wages_war(parked: int, parked_before: int, tail_rows: int) -> bool:
    """Whether a round whose chain limit left ``parked`` rows free wages a price war: more than
    ``tail_rows`` (too many for :func:`tail_ends_phase`) and more than the round before left
    (``parked_before``; n + 1 before a phase's first round): on clustered points, a region's surplus
    bidding its columns' prices down in ε steps, which the exact searches do along shortest paths."""
    return parked > tail_rows and parked > parked_before


def round_ends_phase(parked: int, parked_before: int, last_phase: bool, *, tail_rows: int, stalled_tail: bool,
                     defer_wars: bool, last_tail_to_searches: bool, coarse: bool = False) -> tuple[bool, bool]:
    """(the round ends its phase, its parked rows are deferred to the searches) by :func:`solve`'s
    options, for it and its twin (lapcli.twins.auction_twin): only where the searches take the last
    phase's rows does that phase end early, and only then does a war (``defer_wars``) defer; a
    ``coarse`` phase (never the last) only on the tail rule at min(tail_rows, COARSE_TAIL_ROWS)."""
    if coarse:
        return tail_ends_phase(parked, parked_before, min(tail_rows, COARSE_TAIL_ROWS), stalled_tail), False
    ends = tail_ends_phase(parked, parked_before, tail_rows, stalled_tail) and (not last_phase or last_tail_to_searches)
    war = defer_wars and last_tail_to_searches and tail_wages_war(parked, parked_before, tail_rows)
    return ends or war, war

