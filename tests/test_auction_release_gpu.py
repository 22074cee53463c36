"""The auction's release pass on point sets (lapcli.cuda.auction_release): the tiled form and the
warp-a-row form list the same rows and leave the same state, and both follow the rule computed
in NumPy; with the columns in tiles the tiled form reads only the tiles that could release a row
and still lists the same (pytest -m gpu)."""

import numpy as np
import pytest

from lapcli.points import distance_matrix, prepare_points

from .helpers import eps_between_gaps, late_round_state

pytestmark = pytest.mark.gpu

DEFERRED = 2  # lapcli.cuda.auction.DEFERRED, checked below


def auction_state(rng, n: int, fresh_share: float):
    """A round's state: integer duals (many ties), a partial assignment with a few free rows, a
    share of the assigned rows marked fresh and some free rows deferred; host arrays."""
    v = rng.integers(-6, 1, size=n).astype(np.float64)
    col_of_row = rng.permutation(n).astype(np.int32)
    col_of_row[rng.random(n) < 0.05] = -1
    owner = np.full(n, -1, dtype=np.int64)
    held = col_of_row >= 0
    owner[col_of_row[held]] = np.flatnonzero(held)
    fresh = (rng.random(n) < fresh_share).astype(np.uint8)
    fresh[(~held) & (rng.random(n) < 0.3)] = DEFERRED
    return v, owner, col_of_row, fresh


def near_candidates(device, n: int):
    """Each row's candidate slots as auction_candidates leaves them (its near columns, the
    found-later slots empty) and its spread, host arrays."""
    import cupy

    from lapcli.cuda import auction

    candidates, spread = cupy.empty((n, auction.CANDIDATES), dtype=np.int32), cupy.empty(n)
    device.kernels["auction_candidates"].launch(-(-n // 8), auction.THREADS,
                                                (*device.source(), n, candidates.data.ptr, spread.data.ptr))
    return candidates.get(), spread.get()


def release_once(device, kernel_set, n: int, eps: float, state, candidates, tiles=None):
    """One release pass of ``kernel_set``'s form on a copy of ``state``, reading only the tiles
    that could release a row where ``tiles`` (lapcli.cuda.auction_tiles.ColumnTiles) are given:
    (the listed rows sorted, candidates, fresh, floors, owners) as host arrays."""
    import cupy

    from lapcli.cuda import auction_release, runtime

    v, owner, col_of_row, fresh = state
    columns = cupy.zeros((n, 2), dtype=np.float64)
    columns[:, 0] = cupy.asarray(v)
    columns.view(np.int64)[:, 1] = cupy.asarray(owner)
    arrays = dict(columns=columns, col_of_row=cupy.asarray(col_of_row), candidates=cupy.asarray(candidates),
                  added=cupy.zeros(n, dtype=np.int32), free_rows=cupy.full(n, -7, dtype=np.int32),
                  free_count=cupy.zeros(2, dtype=np.int32), fresh=cupy.asarray(fresh), floors=cupy.zeros(n))
    release = auction_release.ReleasePass(kernel_set, device.source(), n, runtime.current_gpu(),
                                          runtime.current_stream(), **arrays)
    release.run(eps, *([tiles.refreshed(columns, runtime.current_stream())] if tiles else []))
    listed = arrays["free_rows"][:int(arrays["free_count"][0])].get()
    assert len(set(listed.tolist())) == len(listed)
    return (np.sort(listed), arrays["candidates"].get(), arrays["fresh"].get(), arrays["floors"].get(),
            columns.view(np.int64)[:, 1].get())


@pytest.mark.parametrize("n", [1500, 1111, 40, 7])
def test_the_candidates_are_the_twins_near_columns(rng, n):
    """auction_candidates equals lapcli.twins.auction.near_columns: each lane's NEAR cheapest
    columns, ties (integer coordinates make many) to the first column met from column i on; its
    spread is theirs. Sizes no multiple of 32, and fewer columns than candidates."""
    from lapcli.cuda import auction
    from lapcli.cuda import points as device_points
    from lapcli.twins.auction import near_columns

    a = rng.integers(0, 3, size=(n, 2)).astype(np.float64)
    b = rng.integers(0, 3, size=(n, 2)).astype(np.float64)
    problem = prepare_points(a, b, "cityblock")
    candidates, spread = near_candidates(device_points.upload(problem, "auction"), n)
    cost = distance_matrix(problem.rows, problem.columns, "cityblock")
    for i in range(n):
        near = near_columns(cost[i], i)  # [lane, slot]; the kernel's slot s·32 + lane
        assert np.array_equal(candidates[i, :32 * auction.NEAR], near.T.ravel()), i
        assert np.all(candidates[i, 32 * auction.NEAR:] == -1)
        kept = cost[i, near[near >= 0]]
        assert spread[i] == kept.max() - kept.min()


@pytest.mark.parametrize("metric, dim, n, fresh_share, p", [
    ("sqeuclidean", 2, 3000, 1.0, None), ("sqeuclidean", 2, 5000, 0.02, None), ("cityblock", 3, 2500, 0.5, None),
    ("euclidean", 16, 1500, 0.7, None), ("chebyshev", 32, 1100, 0.3, None), ("minkowski", 2, 2100, 0.4, 3.0),
    ("minkowski", 3, 1700, 0.6, 0.4)])
def test_the_tiled_release_pass_equals_a_warp_a_row_and_the_rule(rng, metric, dim, n, fresh_share, p):
    """Integer coordinates and duals make ties (the lowest column wins in both forms); sizes
    that are no multiple of a tile or a chunk, a pass of every row and one of a few."""
    from lapcli.cuda import auction
    from lapcli.cuda import points as device_points

    assert auction.DEFERRED == DEFERRED
    a = rng.integers(-4, 5, size=(n, dim)).astype(np.float64)
    b = rng.integers(-4, 5, size=(n, dim)).astype(np.float64)
    problem = prepare_points(a, b, metric, p=p)
    device = device_points.upload(problem, "auction")
    candidates, _ = near_candidates(device, n)
    state = auction_state(rng, n, fresh_share)
    v, owner, col_of_row, fresh = state
    dense = distance_matrix(problem.rows, problem.columns, problem.metric, problem.p)
    reduced = dense - v[None, :]
    held = col_of_row >= 0
    gap = reduced[np.flatnonzero(held), col_of_row[held]] - reduced[held].min(axis=1)
    eps = float(np.median(gap[gap > 0])) / 2 * (1 + 2**-20)  # about half the checked rows released

    assert "auction_release_scan" in device.kernels  # the point program holds the tiled pass
    warp_form = {key: kernel for key, kernel in device.kernels.items() if key != "auction_release_scan"}
    tiled = release_once(device, device.kernels, n, eps, state, candidates)
    by_warp = release_once(device, warp_form, n, eps, state, candidates)
    for got, want in zip(tiled, by_warp):
        assert np.array_equal(got, want)

    checked = held & (fresh == 1)
    free = ~held & (fresh != DEFERRED)
    out = np.zeros(n, dtype=bool)
    rows = np.flatnonzero(checked)
    out[rows] = reduced[rows, col_of_row[rows]] > reduced[rows].min(axis=1) + 2 * eps
    assert 0 < out.sum() < checked.sum()
    if metric != "minkowski":  # its pow may differ from NumPy's by an ulp
        assert np.array_equal(tiled[0], np.flatnonzero(free | out))
    listed, new_candidates, new_fresh, floors, owners = tiled
    kept = checked & ~np.isin(np.arange(n), listed)
    assert np.all(new_fresh[kept] == 0) and np.array_equal(new_fresh[~kept], fresh[~kept])
    released = np.setdiff1d(listed, np.flatnonzero(free))
    assert np.all(owners[col_of_row[released]] == -1)
    for row in released:  # its best column is a candidate now
        assert reduced[row].argmin() in new_candidates[row] or metric == "minkowski"
    added = np.flatnonzero((new_candidates != candidates).any(axis=1))
    assert np.all(np.isin(added, released)) and np.all(floors[added] == -np.inf)


@pytest.mark.parametrize("n, fresh_share", [(20, 1.0), (300, 0.0), (70_000, 0.01)])
def test_the_tiled_release_pass_equals_a_warp_a_row_at_the_edges(rng, n, fresh_share):
    """Fewer columns than a warp, no row to check (only free rows listed), and more columns than
    MAX_CHUNKS chunks of MIN_CHUNK (chunks capped, the last ones empty): the two forms alike."""
    from lapcli.cuda import auction_release
    from lapcli.cuda import points as device_points

    assert 70_000 > auction_release.MAX_CHUNKS * auction_release.MIN_CHUNK
    device = device_points.upload(prepare_points(rng.random((n, 2)), rng.random((n, 2))), "auction")
    assert "auction_release_scan" in device.kernels
    candidates, _ = near_candidates(device, n)
    state = auction_state(rng, n, fresh_share)
    _, _, col_of_row, fresh = state
    warp_form = {key: kernel for key, kernel in device.kernels.items() if key != "auction_release_scan"}
    tiled = release_once(device, device.kernels, n, 1e-3, state, candidates)
    by_warp = release_once(device, warp_form, n, 1e-3, state, candidates)
    for got, want in zip(tiled, by_warp):
        assert np.array_equal(got, want)
    free = np.flatnonzero((col_of_row < 0) & (fresh != DEFERRED))
    assert np.all(np.isin(free, tiled[0]))
    assert len(tiled[0]) > len(free) or fresh_share == 0.0  # checked rows released too


@pytest.mark.parametrize("metric, dim, n, grid", [
    ("sqeuclidean", 2, 5000, False), ("sqeuclidean", 2, 3000, True), ("cityblock", 3, 2500, True),
    ("euclidean", 4, 2100, False), ("cosine", 2, 1500, False)])
def test_a_release_pass_that_skips_tiles_lists_what_one_reading_every_column_does(rng, metric, dim, n, grid):
    """The columns in Morton order and tiles (lapcli.cuda.auction_tiles), duals near the optimum:
    the tiled pass that reads only the tiles whose bound (box less largest dual) is at or below a
    row's own reduced cost lists the same rows and leaves the same state (each released row's best
    column a candidate, ties to the lowest) as the pass that reads every column and the warp-a-row
    form. Cosine has no bounds (every tile read)."""
    from lapcli.cuda import auction_tiles
    from lapcli.cuda import points as device_points
    from lapcli.twins.tiles import tiles_read_in_release

    points = rng.integers(-4, 5, size=(2, n, dim)) if grid else rng.random((2, n, dim))
    a, b = (side.astype(np.float64) + (1.0 if metric == "cosine" else 0.0) for side in points)
    problem = prepare_points(a, b, metric)
    device = device_points.upload(problem, "auction")
    tiles = auction_tiles.put_in_tiles(device)  # device.columns now in Morton order
    candidates, _ = near_candidates(device, n)
    rows, columns = device.rows.get(), device.columns.get()
    reduced, v, col_of_row = late_round_state(rng, rows, columns, problem.metric)
    col_of_row[rng.random(n) < 0.05] = -1
    owner = np.full(n, -1, dtype=np.int64)
    held = col_of_row >= 0
    owner[col_of_row[held]] = np.flatnonzero(held)
    fresh = (rng.random(n) < 0.7).astype(np.uint8)
    checked = np.flatnonzero(held & (fresh == 1))
    own, best = reduced[checked, col_of_row[checked]], reduced[checked].min(axis=1)
    eps = eps_between_gaps(own - best)
    state = (v, owner, col_of_row, fresh)

    warp_form = {key: kernel for key, kernel in device.kernels.items() if key != "auction_release_scan"}
    by_tiles = release_once(device, device.kernels, n, eps, state, candidates, tiles)
    every_column = release_once(device, device.kernels, n, eps, state, candidates)
    by_warp = release_once(device, warp_form, n, eps, state, candidates)
    for got, want, also in zip(by_tiles, every_column, by_warp):
        assert np.array_equal(got, want) and np.array_equal(got, also)
    out = own > best + 2 * eps
    assert 0 < out.sum() < len(checked)
    tile_v = tiles.v.get()
    assert np.array_equal(tile_v, np.maximum.reduceat(v, np.arange(0, n, 32)))  # as the pass took them
    boxes = tiles.boxes.get()  # the share of tiles the rule lets the pass skip (its twin's)
    read = np.mean([tiles_read_in_release(rows[i], boxes, tile_v, own[k], metric).mean()
                    for k, i in enumerate(checked)])
    assert read == 1.0 if metric == "cosine" else read < 0.6
