"""The point auction's tiles of columns (kernels/auction_tiles.cu, and auction.cu's AuctionTiles):
the columns put in a spatial order (and the rows in theirs: put_rows_in_order), cut into tiles of
TILE consecutive ones, each tile's box of coordinates and, at the start of each round (before its
release pass), its largest dual. A full scan then bounds each tile from below (the metric from the
row's point to the box, less the tile's largest dual) and reads only the tiles that may hold a
column below its threshold: the rest of the row's columns are known to cost more without a cost
computed. The release pass (lapcli.cuda.auction_release) reads a row's tiles by the same bound.

Why: on clustered points a region's surplus of rows wages a price war in which each row's
candidates rise past its floor again and again, and each time the row scans every column (1.1 M
full scans of 65,536 columns on one set of 65,536 points: 18 of its 19 s on an H200). Its
competitors are the columns of its own region, a few tiles of the thousands. The order is
Morton's (the coordinates' bits interleaved), which keeps a tile's points close in every
dimension; its NumPy twin is lapcli.twins.tiles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

FILE = "auction_tiles.cu"
TILE = 32  # columns a tile: a warp's width, lane l reading column l of each (kernels/auction.cu)
MORTON_BITS = 63  # bits of a Morton code, shared among at most this many coordinates (52 at most each)
# Points of more coordinates get no tiles: a tile of 32 of them spans most of every coordinate's
# range (Morton's tiles of 4,096 uniform points: 29 % of random ones' sides at d = 3, 83 % at 16),
# and the bounds' registers would cost the bid kernels occupancy (at d = 5 the warp kernel's 108 ->
# 134 registers: one block of 256 an SM, not two). Cosine costs have no box bound.
MAX_DIM = 4
THREADS = 256  # the tile kernels' blocks
NO_TILES = (0, 0, 0)  # the bid kernels' tile arguments without tiles (a dense matrix): every column scanned


def kernel_defines() -> tuple[str, ...]:
    """kernels/auction_tiles.cu's numbers, set here only."""
    return (f"-DAUCTION_TILES_THREADS={THREADS}",)


def tiled(metric: str, dim: int) -> bool:
    """Whether the point auction of ``metric`` on ``dim`` coordinates puts its columns in tiles
    (kernels/auction.cu bounds tiles only there: AUCTION_TILES_MAX_DIM)."""
    return metric != "cosine" and dim <= MAX_DIM


def kernels() -> tuple[tuple[str, str, str], ...]:
    """The (key, name, signature) of kernels/auction_tiles.cu's kernels, for a Program."""
    return (("auction_tiles_range", "auction_tiles_range", "pqiip"),
            ("auction_tiles_codes", "auction_tiles_codes", "pqiipp"),
            ("auction_tiles_gather", "auction_tiles_gather", "ppiippqpi"),
            ("auction_tile_duals", "auction_tile_duals", "pipi"))


@dataclass
class ColumnTiles:
    """An auction's tiles on the device: ``order`` (the problem's column of each work column, CuPy
    int64), ``boxes`` (count, 2d) float64, fixed, and ``v``, their largest duals, which
    :meth:`refreshed` sets at the start of each round."""

    order: Any
    boxes: Any
    v: Any
    m: int
    duals: Any  # the auction_tile_duals kernel

    @property
    def count(self) -> int:
        return int(self.boxes.shape[0])

    def refreshed(self, state, stream) -> tuple:
        """Queue the tiles' largest duals of ``state`` (the auction's (m, 2) AuctionColumn words)
        on ``stream`` (one launch) and return the tile arguments of the release pass and the bids."""
        self.duals.launch(_warp_blocks(self.count), THREADS, (state.data.ptr, self.m, self.v.data.ptr, self.count),
                          stream=stream)
        return self.boxes.data.ptr, self.v.data.ptr, self.count

    def in_problem_order(self, col_of_row, u, v, row_order=None) -> tuple:
        """Host (col_of_row, u, v) of the work columns (and the work rows of ``row_order``,
        put_rows_in_order's, where given) as the problem's: work row i, the problem's row
        row_order[i], takes column order[col_of_row[i]] and u[i]; v[order[j]] is work column j's."""
        order = self.order.get()
        problem_v = np.empty_like(v)
        problem_v[order] = v
        problem_cols = order[col_of_row]
        if row_order is None:
            return problem_cols, u, problem_v
        rows = row_order.get()
        problem_u, by_row = np.empty_like(u), np.empty_like(problem_cols)
        problem_u[rows], by_row[rows] = u, problem_cols
        return by_row, problem_u, problem_v


def put_in_tiles(points) -> ColumnTiles:
    """Reorders the columns of ``points`` (lapcli.cuda.points.DevicePoints, with the auction's
    kernels) along Morton's curve, both layouts, and returns their tiles: work column j is the
    problem's column ``order[j]``. Three launches and a sort, on the current stream."""
    import cupy

    from .runtime import current_stream

    stream = current_stream()
    m, dim = points.columns.shape
    kernels = points.kernels
    tiles = -(-m // TILE)
    order = morton_order(kernels, points.columns_t)
    columns, columns_t = cupy.empty_like(points.columns), cupy.empty_like(points.columns_t)
    boxes = cupy.empty((tiles, 2 * dim), dtype=np.float64)
    kernels["auction_tiles_gather"].launch(_warp_blocks(tiles), THREADS, (
        points.columns.data.ptr, order.data.ptr, m, dim, columns.data.ptr, columns_t.data.ptr, m, boxes.data.ptr,
        tiles), stream=stream)
    points.columns, points.columns_t = columns, columns_t
    return ColumnTiles(order, boxes, cupy.empty(tiles, dtype=np.float64), m, kernels["auction_tile_duals"])


def put_rows_in_order(points):
    """Reorders the rows of ``points`` (as put_in_tiles takes them) along Morton's curve over their
    own bounding box, both layouts, and returns the order: work row i is the problem's row
    ``order[i]``.

    Why: the auction lists its free rows, and the rows its release pass checks, in index order
    (kernels/auction_release.cu's auction_release_list), and a block of the release scan stages a
    group of columns where any of its 256 listed rows may be released there; rows in a spatial
    order like the columns' make those rows neighbours, so that the groups one needs its block's
    others need too, and a warp's bids read the tiles its neighbours' read. H200, one process, two
    solves a case: 65,536 uniform points 0.55-0.64 s against 0.69-0.70, euclidean 1.13-1.15 against
    1.33-1.35, cityblock 1.30-1.47 against 1.53-1.55, clustered (seeds 0, 2) 0.87-0.98 and
    1.21-1.35 against 1.04-1.06 and 1.22-1.56; 262,144 points within their spread. 1,048,576
    clustered points' coarse phase made 267 M bids in its first 41 s, against 121 M with the rows
    as they came (another lease, the same day), and ended after 75-78 s, where that run's budget
    stopped it at 105 s still parking 605 rows a round."""
    import cupy

    order = morton_order(points.kernels, points.rows_t)
    points.rows = points.rows[order]
    points.rows_t = cupy.ascontiguousarray(points.rows.T)
    return order


def morton_order(kernels: dict, side_t):
    """The points of ``side_t`` ((d, count) float64 CuPy, d <= MAX_DIM) along Morton's curve: the
    indices that sort their codes (stable), int64; two launches and a sort on the current stream."""
    import cupy

    from .runtime import current_stream

    stream = current_stream()
    dim, count = side_t.shape
    scale = cupy.empty(2 * dim, dtype=np.float64)
    codes = cupy.empty(count, dtype=np.uint64)
    kernels["auction_tiles_range"].launch(1, THREADS, (side_t.data.ptr, count, count, dim, scale.data.ptr),
                                          stream=stream)
    kernels["auction_tiles_codes"].launch(max(1, -(-count // THREADS)), THREADS,
                                          (side_t.data.ptr, count, count, dim, scale.data.ptr, codes.data.ptr),
                                          stream=stream)
    return cupy.argsort(codes).astype(np.int64, copy=False)


def _warp_blocks(count: int) -> int:
    """Blocks of THREADS for a warp each of ``count`` items."""
    return max(1, -(-count // (THREADS // 32)))
