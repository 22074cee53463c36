"""The launcher of kernels/sorted_band.cu: engine ``sorted``'s band programme for 1-D sets of
different sizes (lapcli.engines.cpu.sorted_band has the why) on the GPU, the same pairs as the
host's from the same costs (kernels/costs.cuh's Points source, one coordinate).

The rows run in turn (a row's table is a prefix minimum, the next row needs all of it), each over
one cooperative grid whose warps hold WORDS_A_WARP bit words of it or more (one grid barrier a
row; a band of one block, up to 1,024 columns, runs as many warps as it has words and a block's
barrier), launched a slice of rows at a time so that the clock is read between slices; the bits
that say where each row's minimum came from stay on the device (k·width / 8 bytes), read back there
by one thread, a slice of rows a launch, the clock read between; only the k columns come to the
host.
"""

from __future__ import annotations

from functools import lru_cache
from time import perf_counter

import numpy as np

from ..errors import SolverError
from .points import METRIC_CODES
from .runtime import Program, current_gpu, current_stream, load
from .sap_cluster import kernel_text

FILE = "sorted_band.cu"
THREADS = 1024
# A row's least bit words a warp: a block for every 1,024 columns of the band, up to the grid's
# most (H200: 1 beat 4 and 16, 65,536 × 98,304 points 0.25 s against 0.44 and 0.86 s).
WORDS_A_WARP = 1
# Cells a launch (~10 ms on an H200): the clock is read between launches.
CELLS_A_LAUNCH = 1 << 28
# A row's own cost in cells: its barrier and scans, ~2.5 µs over a grid and ~1.3 µs in one block on an
# H200 (1,048,576 rows of a 65-column band: 2.64 s before a band of one block skipped the grid's
# barrier, 1.31 s after) where the band's cells run at ~27 G/s.
ROW_CELLS = 1 << 16
# Rows a launch of the read-back, one thread following one bit word a row: the clock is read between.
BACK_ROWS_A_LAUNCH = 1 << 18


def kernel_defines(metric: str) -> tuple[str, ...]:
    """The block's threads, and the blocks a multiprocessor should hold: two (32 registers, which
    every metric but minkowski's pow fits without spilling), else one."""
    return (f"-DBAND_THREADS={THREADS}", f"-DBAND_MIN_BLOCKS={1 if metric == 'minkowski' else 2}")


@lru_cache(maxsize=None)
def program(metric: str) -> Program:
    """Both kernels on the one-coordinate Points source of ``metric``."""
    source_type = f"Points<{METRIC_CODES[metric]}, 1>"
    return Program("sorted-band", kernel_text("costs.cuh") + "\n" + kernel_text(FILE), kernel_defines(metric),
                   (("rows", f"band_rows<{source_type}>", "ppqddiiiippqp"), ("back", "band_back", "piiiiqp")))


def words(k: int, m: int) -> int:
    """32-bit words of one row's bits."""
    return -(-(m - k + 1) // 32)


def device_bytes(k: int, m: int) -> int:
    """What the programme holds on the device: the bits, one row's table, both sides, the columns."""
    return 4 * k * words(k, m) + 8 * (m - k + 1) + 8 * (k + m) + 8 * k


def band_pairs(x: np.ndarray, y: np.ndarray, metric: str, p: float, sign: float, timeout: float | None = None,
               began: float = 0.0) -> tuple[np.ndarray, float]:
    """(the columns p_0 < … < p_{k−1}, ms spent compiling or loading the kernels): the host's
    band_pairs (lapcli.engines.cpu.sorted_band, same arguments) on the current GPU. SolverError
    past ``timeout`` seconds after ``began``."""
    import cupy

    k, m = len(x), len(y)
    width = m - k + 1
    kernels, compile_ms = load(program(metric))
    warps = THREADS // 32
    resident = kernels["rows"].resident_blocks(THREADS, 0) * current_gpu().sms  # a cooperative grid's most
    blocks = max(1, min(resident, -(-width // (32 * warps * WORDS_A_WARP))))
    if blocks == 1:  # a thin band: as many warps as it has bit words, up to a block's
        warps = min(warps, -(-width // (32 * WORDS_A_WARP)))
    segment = 32 * -(-width // (32 * warps * blocks))  # each warp's t, whole bit words
    xs, ys = (cupy.asarray(np.ascontiguousarray(side, dtype=np.float64).ravel()) for side in (x, y))
    least = cupy.zeros(width, dtype=np.float64)
    took = cupy.empty((k, words(k, m)), dtype=np.uint32)
    cols = cupy.empty(k, dtype=np.int64)
    block_minima = cupy.empty(2 * blocks, dtype=np.float64)
    stream = current_stream()
    rows_a_launch = max(1, CELLS_A_LAUNCH // (width + ROW_CELLS))
    for first in range(0, k, rows_a_launch):
        if timeout is not None and perf_counter() - began > timeout:
            raise SolverError(f"the sorted band ran past the time limit: {first:,} of {k:,} rows matched")
        rows = (first, min(k, first + rows_a_launch))
        kernels["rows"].launch(blocks, 32 * warps, (xs.data.ptr, ys.data.ptr, m, p, sign, *rows, width, segment,
                                                 least.data.ptr, took.data.ptr, words(k, m), block_minima.data.ptr),
                               stream=stream, cooperative=True)
        cupy.cuda.get_current_stream().synchronize()
    for last in range(k, 0, -BACK_ROWS_A_LAUNCH):  # from the last row up, each slice from the row after it
        if timeout is not None and perf_counter() - began > timeout:
            raise SolverError(f"the sorted band ran past the time limit: {k - last:,} of {k:,} pairs read back")
        rows = (max(0, last - BACK_ROWS_A_LAUNCH), last)
        kernels["back"].launch(1, 1, (took.data.ptr, k, *rows, width, words(k, m), cols.data.ptr), stream=stream)
        cupy.cuda.get_current_stream().synchronize()
    return cupy.asnumpy(cols), compile_ms
