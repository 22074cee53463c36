"""A round's release pass for lapcli.cuda.auction: every row that is free, or whose column is no
longer within 2ε of its row's best over all n columns, is listed for the round's bids
(kernels/auction.cu's ``auction_release_row``, one rule in both forms below).

- On a dense work matrix, ``auction_release``: a warp a row, lane l reading columns l, l + 32, ...
  of the row (coalesced), over every row marked fresh.
- On point sets, tiled (kernels/auction_release.cu): the rows to check are listed, a block stages a
  tile of the columns' coordinates and duals in shared memory and each thread scans its own row
  against it (in chunks of columns, so that a few rows still fill the GPU), and a warp a row merges
  the chunks and applies the rule. A warp a row read each column's coordinates and dual once for
  every row: in a phase of few free rows a round lists a few thousand rows that bid, and the pass
  was most of the round. Where the columns are in tiles (lapcli.cuda.auction_tiles), a row reads
  only the tiles whose bound is at or below its own pair's reduced cost (no other can release it),
  and a block stages a group of 256 columns only where one of its rows reads a tile of it: in a
  price war over 1,048,576 clustered points the pass had read every column for ~10^5 rows a
  round, 95 % of the kernel time (H200; docs/points.md). Its device memory: the check list (4
  bytes a row) and the chunks' bests, 12 bytes an entry, max(n, min(64·n, 2²²)) entries (48 MB
  from 65,536 rows up).
"""

from __future__ import annotations

import numpy as np

from .auction_tiles import NO_TILES

FILE = "auction_release.cu"
THREADS = 256  # a block of the tiled scan: a row a thread; the other two kernels' blocks too
MAX_CHUNKS = 64  # column chunks a tiled scan splits the columns into, at most
MIN_CHUNK = 1024  # columns of a chunk, at least
SOURCE_ARGUMENTS = "ppqdd"  # the cost source's five arguments (kernels/costs.cuh)
LIST_SIGNATURE = "ipppppp"
SCAN_SIGNATURE = SOURCE_ARGUMENTS + "ippppqppppi"  # and the tiles (lapcli.cuda.auction_tiles)
FINISH_SIGNATURE = SOURCE_ARGUMENTS + "ippppdppppppqipp"


def kernel_defines() -> tuple[str, ...]:
    """kernels/auction_release.cu's numbers, set here only."""
    return (f"-DAUCTION_RELEASE_THREADS={THREADS}", f"-DAUCTION_RELEASE_MAX_CHUNKS={MAX_CHUNKS}",
            f"-DAUCTION_RELEASE_MIN_CHUNK={MIN_CHUNK}")


def tiled_kernels(source_type: str) -> tuple[tuple[str, str, str], ...]:
    """The (key, name expression, signature) of the tiled pass on a point ``source_type`` (one of
    kernels/costs.cuh's with a point's coordinates: ``column`` and ``cost``), for a Program."""
    return (("auction_release_list", "auction_release_list", LIST_SIGNATURE),
            ("auction_release_scan", f"auction_release_scan<{source_type}>", SCAN_SIGNATURE),
            ("auction_release_finish", f"auction_release_finish<{source_type}>", FINISH_SIGNATURE))


class ReleasePass:
    """The release pass of one auction (its state arrays, CuPy, on the current device): tiled where
    ``kernel_set`` holds :func:`tiled_kernels`, else a warp a row. ``run(eps)`` queues one pass on
    ``stream`` and returns its kernel launches; the rows it lists are in ``free_rows``, their count
    in ``free_count[0]`` (which the caller zeroes before)."""

    def __init__(self, kernel_set: dict, source: tuple, n: int, gpu, stream, *, columns, col_of_row, candidates,
                 added, free_rows, free_count, fresh, floors):
        import cupy

        self.kernel_set, self.source, self.n, self.stream = kernel_set, source, n, stream
        # the state arrays' addresses, in the kernels' order
        self.addresses = tuple(array.data.ptr for array in (columns, col_of_row, candidates, added))
        self.lists = tuple(array.data.ptr for array in (free_rows, free_count, fresh, floors))
        self.tiled = "auction_release_scan" in kernel_set
        self.row_blocks = max(1, -(-n // (THREADS // 32)))  # a warp a row
        if self.tiled:
            scan = kernel_set["auction_release_scan"]
            self.scan_blocks = max(1, scan.resident_blocks(THREADS, 0)) * gpu.sms
            self.finish_blocks = max(1, kernel_set["auction_release_finish"].resident_blocks(THREADS, 0)) * gpu.sms
            self.checks = cupy.empty(n, dtype=np.int32)
            self.check_count = cupy.zeros(1, dtype=np.int32)
            self.capacity = max(n, min(MAX_CHUNKS * n, 1 << 22))  # chunks x listed rows, at most
            self.chunk_best = cupy.empty(self.capacity, dtype=np.float64)
            self.chunk_best_j = cupy.empty(self.capacity, dtype=np.int32)

    def run(self, eps: float, tiles: tuple = NO_TILES) -> int:
        """Queue one release pass at tolerance ``eps``; the kernel launches it took. ``tiles``: the
        tile arguments of lapcli.cuda.auction_tiles.ColumnTiles.refreshed, taken after the last
        bids, by which the tiled form reads only the tiles that could release a row; NO_TILES:
        every column."""
        if not self.tiled:
            self.kernel_set["auction_release"].launch(self.row_blocks, THREADS, (
                *self.source, self.n, *self.addresses, eps, *self.lists), stream=self.stream)
            return 1
        columns, col_of_row, _, _ = self.addresses
        free_rows, free_count, fresh, _ = self.lists
        self.check_count.fill(0)
        checks, check_count = self.checks.data.ptr, self.check_count.data.ptr
        self.kernel_set["auction_release_list"].launch(
            max(1, -(-self.n // THREADS)), THREADS,
            (self.n, col_of_row, fresh, free_rows, free_count, checks, check_count), stream=self.stream)
        best, best_j = self.chunk_best.data.ptr, self.chunk_best_j.data.ptr
        self.kernel_set["auction_release_scan"].launch(
            self.scan_blocks, THREADS, (*self.source, self.n, columns, col_of_row, checks, check_count, self.capacity,
                                        best, best_j, *tiles), stream=self.stream)
        self.kernel_set["auction_release_finish"].launch(
            self.finish_blocks, THREADS, (*self.source, self.n, *self.addresses, eps, *self.lists, checks, check_count,
                                          self.capacity, self.scan_blocks, best, best_j), stream=self.stream)
        return 3
