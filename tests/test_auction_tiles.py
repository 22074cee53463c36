"""The point auction's tiles of columns on the CPU: the spatial order and the tiles' boxes, which
the GPU's full scans bound each tile by, and the tiles a release pass reads, in their NumPy twin
(lapcli.twins.tiles)."""

import numpy as np
import pytest

from lapcli.cuda.auction_tiles import TILE
from lapcli.twins.tiles import spatial_order, tile_boxes

from .helpers import eps_between_gaps, late_round_state


def box_extents(points) -> np.ndarray:
    """Each tile's box sides (tiles, d)."""
    boxes = tile_boxes(points)
    d = points.shape[1]
    return boxes[:, d:] - boxes[:, :d]


@pytest.mark.parametrize("d", [1, 2, 3, 16])
def test_the_spatial_order_makes_tiles_small_boxes(rng, d):
    """The order is a permutation, and the tiles of 32 consecutive points in it are far smaller
    boxes than the tiles of the points as they came (uniform points: a tile of random ones spans
    nearly the whole range in every coordinate)."""
    points = rng.random((4096, d))
    order = spatial_order(points)
    assert sorted(order.tolist()) == list(range(len(points)))
    ordered, plain = box_extents(points[order]), box_extents(points)
    # Morton's tiles are about 1.6 % of the random ones' sides at d = 1, 15 % at 2, 29 % at 3, 83 % at 16
    assert ordered.sum(axis=1).mean() < {1: 0.05, 2: 0.2, 3: 0.4, 16: 0.9}[d] * plain.sum(axis=1).mean()


def test_the_spatial_order_follows_morton_on_a_grid():
    """On the 4 x 4 grid, Morton's curve visits the quadrants in turn, x's bit after y's at each
    level (the last coordinate's bit lowest): (0,0) (0,1) (1,0) (1,1), then the next quadrant."""
    grid = np.array([(x, y) for x in range(4) for y in range(4)], dtype=np.float64)
    order = spatial_order(grid[::-1].copy())
    visited = [tuple(p) for p in grid[::-1][order].astype(int).tolist()]
    assert visited[:8] == [(0, 0), (0, 1), (1, 0), (1, 1), (0, 2), (0, 3), (1, 2), (1, 3)]


def test_equal_points_keep_their_order_and_wide_points_use_63_coordinates(rng):
    """Ties keep the caller's order (a stable sort), and points of more than 63 coordinates are
    ordered by their first 63 (a code has 63 bits)."""
    same = np.zeros((100, 2))
    assert spatial_order(same).tolist() == list(range(100))
    wide = rng.random((300, 70))
    shuffled = wide.copy()
    shuffled[:, 63:] = rng.random((300, 7))  # the coordinates past the 63rd do not count
    assert spatial_order(wide).tolist() == spatial_order(shuffled).tolist()


@pytest.mark.parametrize("m", [1, 31, 32, 1000])
def test_a_tiles_box_holds_its_points_and_no_more(rng, m):
    """Tile t's box is the least and largest coordinates of points 32t ... 32t + 31 (a short last
    tile: of the points it has)."""
    points = rng.random((m, 3))
    boxes = tile_boxes(points)
    assert boxes.shape == (-(-m // TILE), 6)
    for t in range(len(boxes)):
        tile = points[t * TILE:(t + 1) * TILE]
        assert boxes[t, :3].tolist() == tile.min(axis=0).tolist()
        assert boxes[t, 3:].tolist() == tile.max(axis=0).tolist()



def test_one_coordinate_is_sorted_order(rng):
    """On one coordinate Morton's order is the points' sorted order, the largest last (a code of
    63 bits a coordinate would round the scale 2^63 − 1 to 2^63 and give the largest point code 0)."""
    points = rng.random((1000, 1))
    assert np.all(np.diff(points[spatial_order(points), 0]) >= 0)


def test_points_of_few_coordinates_get_tiles_and_the_kernels_agree():
    """Tiles for every metric but cosine up to MAX_DIM coordinates (lapcli.cuda.auction_tiles.tiled),
    the same limit the bid kernels are compiled with (AUCTION_TILES_MAX_DIM)."""
    from lapcli.cuda import auction, auction_tiles

    assert auction_tiles.tiled("sqeuclidean", 2) and auction_tiles.tiled("chebyshev", auction_tiles.MAX_DIM)
    assert not auction_tiles.tiled("cosine", 2) and not auction_tiles.tiled("cityblock", auction_tiles.MAX_DIM + 1)
    assert f"-DAUCTION_TILES_MAX_DIM={auction_tiles.MAX_DIM}" in auction.kernel_defines()


class OnDevice:
    """A host array as put_in_tiles' and put_rows_in_order's orders are read back (``.get()``)."""

    def __init__(self, array):
        self.array = array

    def get(self):
        return self.array


@pytest.mark.parametrize("rows_ordered", [True, False])
def test_an_answer_in_the_work_order_maps_back_to_the_problems_rows_and_columns(rng, rows_ordered):
    """ColumnTiles.in_problem_order: work row i is the problem's row row_order[i] and work column j
    its column order[j]; an assignment and its duals in the work order come back as the problem's
    (rows as they came where no row order is given)."""
    from lapcli.cuda.auction_tiles import ColumnTiles

    n = 500
    problem_cols, u, v = rng.permutation(n), rng.random(n), rng.random(n)
    column_order = rng.permutation(n)
    row_order = rng.permutation(n) if rows_ordered else np.arange(n)
    work_column = np.argsort(column_order)  # the work column of each problem column
    tiles = ColumnTiles(OnDevice(column_order), np.zeros((n // TILE, 4)), None, n, None)
    back = tiles.in_problem_order(work_column[problem_cols[row_order]], u[row_order], v[column_order],
                                  OnDevice(row_order) if rows_ordered else None)
    for got, want in zip(back, (problem_cols, u, v)):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("metric, dim, grid, p", [("sqeuclidean", 2, False, 2.0), ("sqeuclidean", 2, True, 2.0),
                                                  ("cityblock", 3, True, 2.0), ("euclidean", 4, False, 2.0),
                                                  ("minkowski", 2, False, 3.0), ("minkowski", 3, False, 0.4),
                                                  ("cosine", 2, False, 2.0)])
def test_the_release_pass_reads_every_tile_that_could_release_a_row_and_few_others(rng, metric, dim, grid, p):
    """tiles_read_in_release on a late round's state (the optimal duals, the columns of neighbours
    along Morton's curve swapped, columns in tiles): over the tiles it reads, the release rule
    releases the same rows as over every column, with the same best column (the lowest on ties);
    on 2-D sqeuclidean points a row reads few tiles (5-6 of the 47 on average over twelve seeds)."""
    from lapcli.twins.tiles import tiles_read_in_release

    n = 1500
    points = rng.integers(-4, 5, size=(2, n, dim)) if grid else rng.random((2, n, dim))
    rows, columns = (side.astype(np.float64) for side in points)
    if metric == "cosine":
        rows, columns = (side / np.linalg.norm(side, axis=1)[:, None] for side in (rows + 1.0, columns + 1.0))
    columns = columns[spatial_order(columns)]
    reduced, v, col_of_row = late_round_state(rng, rows, columns, metric, p)
    own = reduced[np.arange(n), col_of_row]
    best = reduced.min(axis=1)
    eps = eps_between_gaps(own - best)
    boxes, tile_v = tile_boxes(columns), np.maximum.reduceat(v, np.arange(0, n, TILE))
    released, read = 0, []
    for i in range(n):
        tiles = tiles_read_in_release(rows[i], boxes, tile_v, own[i], metric, p)
        in_read = np.repeat(tiles, TILE)[:n]
        read.append(tiles.sum())
        seen = np.where(in_read, reduced[i], np.inf)
        assert (own[i] > seen.min() + 2 * eps) == (own[i] > best[i] + 2 * eps), i
        if own[i] > best[i] + 2 * eps:
            released += 1
            assert seen.argmin() == reduced[i].argmin(), i
    assert 0 < released < n
    if metric == "cosine":
        assert min(read) == len(boxes)
    elif metric == "sqeuclidean" and not grid:
        assert np.mean(read) < 8
