"""The point auction's warm start: its columns' first duals from a sample of the two sets.

Why: on clustered points each region holds a few more points of one set than of the other, and
that surplus must travel to other regions. From v = 0 the auction moves it by bidding the
region's prices up in its coarse first phase (a price war of 300-400 rounds on 65,536 points).
At a coarser scale the two sets' optimal duals are those of a sample that keeps each region's
share of both sets: every 16th point of each set along Morton's curve, at most 8,192 (a stratified
sample, as the multiscale transport solvers build their coarse levels: Mérigot, "A multiscale
approach to optimal transport", 2011; Schmitzer, "A sparse multiscale algorithm for dense optimal
transport", 2016). The sample is solved as its cost matrix on the GPU (engine cuda-sap's square
solve, which the engine hands in), and its row duals u extend to every column by the c-transform
v[j] = min over sampled rows i of c(i, j) − u[i], one streamed pass: on a sampled column that is
the sample's own v; elsewhere the largest v under which the sampled rows stay dual-feasible.

The auction is exact from any start (each phase's release pass establishes its slackness over
all columns); the start only decides how far its prices must move. H200, 65,536 2-D points, three
calls (docs/points.md): clustered seeds 0, 2 and 5 1.05-1.60 s against 1.36-2.26 from v = 0,
seed 3 1.55-1.79 against 1.64-1.89; uniform sets, euclidean and cityblock within their spread.
At 131,072 and 262,144 points it is what lets the coarse phase end: clustered sets took 3.8-6.0
and 11.7-16.6 s with it (the coarse factor of sap_points.coarse_factor), and ran past 45 s
without it at 262,144 (as from v = 0 without the coarse phase); at 1,048,576 points, clustered
sets take 88 and 135 s with it. Its sample's solve also tells whether a region's surplus must
travel (reach, FAR_REACH): where none must, as between uniform sets, the coarse factor stays at
its least (1,048,576 uniform points 44.5 s, against 84.0 at the factor clustered sets need,
both with the chain limit of 2^20 bids then).
The coarse first phase stays: without it the sample's errors (a region's surplus is known to
16 points) became wars at the fine first ε, and 600-1,100 rows went to the searches
(10-19 s). An auction's duals only fall, so a column the start gives too low a dual waits until its
neighbours' fall too: the start must not be finer than its errors.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ...cost_cap import CapRetry
from ...cuda import auction_tiles

# Every SAMPLE_EVERY-th point of each set along Morton's curve makes the sample (H200, 65,536
# points: 8 took 0.25-0.76 s to solve the sample of 8,192 and was slower overall), and no more than
# SAMPLE_MOST points: above 131,072 the stride grows (H200, 262,144 clustered points: a sample of
# 16,384 took 1.4-1.5 s to solve and its matrix 2.1 GB, 8,192 0.21-0.34 s and 0.5 GB; the auction
# after it the same).
SAMPLE_EVERY, SAMPLE_MOST = 16, 8192
# Squares of WARM_FROM to WARM_UP_TO points start warm (a sample of 2,048 points or more; H200,
# 32,768 clustered points 0.60-0.67 s against 0.63-0.72 from v = 0, uniform 0.40-0.43 against
# 0.34-0.52; 131,072, 262,144 and 1,048,576: sap_points.COARSE_FIRST_UP_TO's note; no larger
# square was measured).
WARM_FROM, WARM_UP_TO = 32_768, 1_048_576
# A sample's optimum "moves points far" where the FAR_QUANTILE of its matched costs exceeds FAR_REACH
# times its median row minimum: a region's surplus travels to another region, many times its
# nearest-neighbour distance (squared), and the coarse phase's ε must grow with n to carry it
# (sap_points.coarse_factor). Between two uniform sets the optimal matching's displacement grows
# only as sqrt(log n) of the nearest neighbour's (Ajtai, Komlós and Tusnády, "On optimal
# matchings", 1984). The CPU's twin of the sample (scipy's solve, 2-D sqeuclidean, the columns in
# the rows' frame as the engine solves them: lapcli.points_frame; 16,384 to 1,048,576 points, seven
# seeds a size up to 65,536, three above): uniform sets 8.5-12.6, clustered ones 106-902.
FAR_QUANTILE, FAR_REACH = 99.0, 32.0


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """column_duals' answer: the columns' first duals ``v`` (their work order), the sample's
    points a side, and its ``reach`` (:func:`reach`)."""

    v: object
    sampled: int
    reach: float

    @property
    def moves_far(self) -> bool:
        """Whether the sample's optimum moves points far (FAR_REACH)."""
        return self.reach > FAR_REACH


def warms(points) -> bool:
    """Whether the auction on ``points`` (lapcli.cuda.points.DevicePoints) starts warm: a square of
    WARM_FROM to WARM_UP_TO points whose columns have Morton codes (auction_tiles.tiled)."""
    return (points.k == points.m and WARM_FROM <= points.k <= WARM_UP_TO
            and auction_tiles.tiled(points.metric, points.rows.shape[1]))


def stride(count: int) -> int:
    """The sample takes every stride(count)-th of ``count`` points: SAMPLE_EVERY, or more where
    that would take over SAMPLE_MOST."""
    return max(SAMPLE_EVERY, -(-count // SAMPLE_MOST))


def c_transform(points, rows, u):
    """v[j] = min over the (count', d) ``rows`` of c(row, column j) − u[row], for every column of
    ``points`` (their work order): lapcli.cuda.points.row_min with the sides swapped, on the
    columns against ``rows`` (every metric here is symmetric)."""
    import cupy

    from ...cuda import points as device_points

    with_rows = dataclasses.replace(points, rows=rows, rows_t=cupy.ascontiguousarray(rows.T))
    return device_points.row_min(with_rows, u, swapped=True)[0]


def reach(costs, col_of_row) -> float:
    """How far an optimal assignment ``col_of_row`` of the square ``costs`` (NumPy or CuPy) moves
    its points: the FAR_QUANTILE of its matched costs over the median of its rows' least costs
    (inf where that median is 0 and a matched cost is not; 0 where both are)."""
    from ...arrays import host
    from ...problem import array_module

    xp = array_module(costs)
    matched = costs[xp.arange(costs.shape[0]), xp.asarray(col_of_row)]
    # both on the host: cupy.percentile imports cupyx.scipy, and cupy.median compiles its kernels (seconds, once)
    far, near = float(np.percentile(host(matched), FAR_QUANTILE)), float(np.median(host(costs.min(axis=1))))
    return far / near if near > 0 else (np.inf if far > 0 else 0.0)


def column_duals(points, solve_matrix, timeout: float | None = None) -> WarmStart:
    """The auction's first column duals (their work order), the c-transform of the sample's row
    duals, the sample's cost matrix solved by ``solve_matrix(problem, timeout=)``; with the
    sample's size and reach. Both sides are already in Morton's order (auction_tiles.put_in_tiles
    and put_rows_in_order; their twin: lapcli.twins.tiles.spatial_order): each one's sample is
    every stride-th point as they lie."""
    import cupy

    from ...points import distance_matrix
    from ...problem import prepare

    rows = cupy.ascontiguousarray(points.rows[::stride(points.k)])
    columns = points.columns[::stride(points.m)]
    costs = distance_matrix(rows, columns, points.metric, points.p)
    try:
        sample = solve_matrix(prepare(costs, check=False), timeout=timeout)
    except CapRetry as retry:  # a start needs no tighter proof than the one its answer has (lapcli.cost_cap)
        sample = retry.first
    sample_reach = reach(costs, sample.cols[np.argsort(sample.rows)])
    del costs  # (up to 0.5 GB) before the c-transform's pass
    v = c_transform(points, rows, cupy.asarray(sample.duals[0], dtype=np.float64))
    return WarmStart(v, int(rows.shape[0]), sample_reach)


def load_programs() -> float:
    """Compile, or read from the kernel cache, what the sample's solve runs (engine cuda-sap on a
    float64 matrix: the auction, then the searches, in one block for the smallest sample, WARM_FROM's
    2,048 points = batch_lap.MAX_COLUMNS, over a cluster for larger ones, and the certificate's
    pass); the milliseconds it took."""
    from ...certificate import row_slacks_program
    from ...cuda import auction, batch_lap, sap_cluster
    from ...cuda.runtime import load

    one_block = batch_lap.program("float64", *batch_lap.choose_layout(batch_lap.MAX_COLUMNS))
    return sum(load(program)[1] for program in (auction.dense_program("float64"), one_block, sap_cluster.program(),
                                                row_slacks_program("float64", False)))
