"""The launcher of kernels/sap_rounds.cu: the searches that finish a point auction, each a
label-correcting shortest-path computation that scans up to ROUND_ROWS rows a round
(delta-stepping), over every multiprocessor in one cooperative launch. A round's work is its rows
against every column, so it wants the whole GPU; its column state (the distance, dual and flags
of each column) lives in the owning block's shared memory: :func:`max_columns`.

lapcli.twins.round_searches is its specification in NumPy: the same rounds, but for which of more
than ROUND_ROWS qualifying columns a round takes (the kernel: whichever warps come first).
"""

from __future__ import annotations

import numpy as np

from . import sap_cluster
from .runtime import current_gpu, current_stream, reused_events

# Rows a round scans at most: H100, 65,536 points (docs/points.md); a NumPy run of the rule on
# 4,096 uniform points' auction tail took 6.5x / 8.5x / 10x fewer rounds than the Dijkstra steps
# with 16 / 32 / 64, and scanned 1.4x / 2.3x / 3.9x as many rows.
ROUND_ROWS = 32
# A round's width halves where more pending columns than NARROW_ABOVE qualified, and doubles where
# fewer than WIDEN_BELOW did.
NARROW_ABOVE = ROUND_ROWS
WIDEN_BELOW = ROUND_ROWS // 4
STATS = ("status", "searches", "rounds", "rows", "ns")
# the point source (5), k, m, v, col4row, path, row4col, pair_cost, bests, counts, lists, control,
# delta, timeout_ns, stats
SIGNATURE = "ppqddiipppppppppdqp"
ENTRY_BYTES = 32  # a selected row: int row, then spc, u and floor as doubles
BEST_BYTES = 24  # a block's R1 winner
COUNTS_BYTES = 16  # three rounds' list counts (unsigned), padded
BYTES_PER_COLUMN = 2 * 8 + 1  # spc and v, and the flags


def kernel_defines(threads: int) -> tuple[str, ...]:
    """kernels/sap.cu's numbers (its helpers are this kernel's; no cluster) and the round's."""
    return (*sap_cluster.kernel_defines(threads=threads, cluster=1), f"-DROUND_ROWS={ROUND_ROWS}",
            f"-DROUND_NARROW_ABOVE={NARROW_ABOVE}", f"-DROUND_WIDEN_BELOW={WIDEN_BELOW}")


def kernel_source() -> str:
    """The cost sources, kernels/sap.cu's helpers and kernels/sap_rounds.cu, in one text."""
    return sap_cluster.kernel_source() + "\n" + sap_cluster.kernel_text("sap_rounds.cu")


def kernel_name(source_type: str) -> str:
    return f"sap_rounds<{source_type}>"


def static_shared(threads: int, record: int) -> int:
    """The kernel's own shared arrays for rows of ``record`` doubles: each warp's R1 winner and the
    grid's, the round's rows and their records; rounded up to the kilobyte."""
    own = (threads // 32 + 1) * BEST_BYTES + ROUND_ROWS * ENTRY_BYTES + ROUND_ROWS * record * 8
    return (own + 1023) // 1024 * 1024


def slots(m: int, blocks: int, threads: int) -> int:
    """Columns each thread owns."""
    return max(1, -(-m // (threads * blocks)))


def max_columns(shared_per_block: int, blocks: int, threads: int, record: int) -> int:
    """The most columns whose state fits ``blocks`` blocks of ``threads`` with ``shared_per_block``
    opt-in bytes each."""
    free = shared_per_block - static_shared(threads, record)
    return max(0, free // (threads * BYTES_PER_COLUMN)) * threads * blocks


def launch(kernel, source: tuple, k: int, m: int, v_start, col_start, delta: float, *, threads: int,
           timeout: float | None = None, compile_ms: float = 0.0) -> sap_cluster.ClusterResult:
    """Queue the searches on the current stream, one block on each multiprocessor: ``source`` the
    point source's five arguments (kernels/costs.cuh); ``v_start`` (m,) float64 and ``col_start``
    (k,) int32 (−1: free) the start, every assigned row tight; R2's width starting at ``delta``."""
    import cupy

    if not 1 <= k <= m:
        raise ValueError(f"need 1 <= k <= m, got k = {k}, m = {m}")
    blocks = current_gpu().sms
    v = cupy.array(v_start, dtype=np.float64)
    col_of_row = cupy.array(col_start, dtype=np.int32)
    path, row4col = cupy.empty(m, dtype=np.int32), cupy.empty(m, dtype=np.int32)
    pair_cost = cupy.empty(m, dtype=np.float64)
    scratch = cupy.zeros(2 * blocks * BEST_BYTES + 2 * ROUND_ROWS * ENTRY_BYTES + COUNTS_BYTES + 8, dtype=np.uint8)
    bests = scratch.data.ptr
    lists = bests + 2 * blocks * BEST_BYTES
    counts = lists + 2 * ROUND_ROWS * ENTRY_BYTES
    control = counts + COUNTS_BYTES
    stats = cupy.zeros(len(STATS), dtype=np.int64)
    shared = slots(m, blocks, threads) * threads * BYTES_PER_COLUMN
    kernel.allow_shared(shared)
    limit_ns = min(int(timeout * 1e9), 2**63 - 1) if timeout else 2**63 - 1
    stream = current_stream()
    begin, end = reused_events(cupy.cuda.runtime.getDevice(), "sap_rounds", 2)
    begin.record(stream)
    kernel.launch(blocks, threads, (*source, k, m, v.data.ptr, col_of_row.data.ptr, path.data.ptr, row4col.data.ptr,
                                    pair_cost.data.ptr, bests, counts, lists, control, float(delta), limit_ns,
                                    stats.data.ptr), shared=shared, stream=stream, cooperative=True)
    end.record(stream)
    return sap_cluster.ClusterResult(col_of_row, v, stats, (begin, end), compile_ms, STATS)
