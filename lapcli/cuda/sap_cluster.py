"""The launcher of kernels/sap.cu: one k × m problem (k ≤ m, minimise) by shortest augmenting paths,
each Dijkstra search spread over one thread-block cluster, for any m whose column state fits the
cluster's shared memory (:func:`max_columns`: 55,296 columns on an H100 or H200). The costs come
from a source of kernels/costs.cuh: a dense work matrix (:func:`solve`) or two point sets whose
costs are computed as they are read (lapcli.cuda.points, :func:`launch`).

Why a cluster: a search step is a scan of one row and an argmin over all columns. In one block
(kernels/batch_lap.cu, the searches of engine ``cuda-sap`` up to 2048 columns) the row is read by
one multiprocessor; a grid-wide step pays a grid barrier, microseconds. The blocks of a cluster
share a hardware barrier and each other's shared memory, so a step costs a block barrier and a
cluster barrier, and the row is read by CLUSTER multiprocessors at once (2–3.4 µs a step on an
H100 against ~0.6 µs for one block at 2048 columns: docs/design.md says where it goes).

lapcli.twins.reference_stack (with the same start) is the kernel's specification: the same steps,
search order and tie-break, so integer costs give the same assignment and duals.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

from .runtime import Program, current_gpu, current_stream, load, reused_events

CLUSTER = 8  # blocks of one cluster: the portable maximum
THREADS = 256
STATUSES = {"SAP_OK": 0, "SAP_NO_COLUMN": 1, "SAP_TIMEOUT": 2, "SAP_PATH_CAP": 3}
STATUS_MESSAGES = {
    1: "no column is left at a finite distance: the problem has no feasible assignment",
    2: "the shortest-path kernel ran past its time limit",
    3: "an augmenting path ran longer than the rows (a bug, please report it)",
}
# work dtype -> (cost type, dual type, dual dtype)
KERNEL_TYPES = {
    "int32": ("int", "long long", np.int64),
    "int64": ("long long", "long long", np.int64),
    "float32": ("float", "double", np.float64),
    "float64": ("double", "double", np.float64),
}
# A column's shared state: spc, v and its pair's cost (8 bytes each), path and row4col (4), scanned (1).
BYTES_PER_COLUMN = 3 * 8 + 2 * 4 + 1


def static_shared(threads: int = THREADS, cluster: int = CLUSTER) -> int:
    """The kernel's own shared arrays: two steps' winners of each warp and of the block (24-byte
    candidates), the control word, rounded up."""
    return (2 * (threads // 32 + 1) * 24 + 64 + 1023) // 1024 * 1024


STATS = ("status", "searches", "steps", "ns")
# the cost source (first, second, stride, p, sign: kernels/costs.cuh), k, m, v, col4row, timeout_ns, stats
SIGNATURE = "ppqddiippqp"


def kernel_defines(threads: int = THREADS, cluster: int = CLUSTER) -> tuple[str, ...]:
    return (f"-DCLUSTER={cluster}", f"-DTHREADS={threads}", *(f"-D{name}={code}" for name, code in STATUSES.items()))


def kernel_text(name: str) -> str:
    return resources.files("lapcli").joinpath(f"kernels/{name}").read_text()


def kernel_source() -> str:
    """kernels/sap.cu behind the cost sources it is templated on."""
    return kernel_text("costs.cuh") + "\n" + kernel_text("sap.cu")


def kernel_name(dtype: str) -> str:
    cost_type, dual_type, _ = KERNEL_TYPES[dtype]
    return f"sap_cluster<DenseRows<{cost_type}, {dual_type}>, {dual_type}>"


@lru_cache(maxsize=None)
def program(threads: int = THREADS, cluster: int = CLUSTER) -> Program:
    """The kernels of every dtype for blocks of ``threads`` in clusters of ``cluster`` (the defaults
    but in measurements)."""
    kernels = tuple((dtype, kernel_name(dtype), SIGNATURE) for dtype in KERNEL_TYPES)
    return Program("sap_cluster", kernel_source(), kernel_defines(threads, cluster), kernels)


def slots(m: int, threads: int = THREADS, cluster: int = CLUSTER) -> int:
    """Columns each thread owns."""
    return max(1, -(-m // (threads * cluster)))


def shared_bytes(m: int, threads: int = THREADS, cluster: int = CLUSTER) -> int:
    """Each block's dynamic shared memory for m columns."""
    return slots(m, threads, cluster) * threads * BYTES_PER_COLUMN


def max_columns(shared_per_block: int, threads: int = THREADS, cluster: int = CLUSTER) -> int:
    """The most columns whose state fits ``shared_per_block`` opt-in bytes per block."""
    free = shared_per_block - static_shared(threads, cluster)
    return max(0, free // (threads * BYTES_PER_COLUMN)) * threads * cluster


def device_max_columns() -> int:
    """max_columns on the current device (its opt-in shared memory per block)."""
    return max_columns(current_gpu().max_shared)


@dataclass
class ClusterResult:
    """col_of_row (k,) int32 and v (m,) of the dual dtype on the device; stats (4,) int64 (STATS);
    the launch's events, for its time once the stream has passed them."""

    col_of_row: Any
    v: Any
    stats: Any
    events: tuple
    compile_ms: float
    names: tuple[str, ...] = STATS  # the stats' names in the kernel's order (kernels/sap_rounds.cu has its own)

    def checked_stats(self, timed_out=None) -> dict[str, int]:
        """The stats by name (``names``), after the launch: one copy back, which waits for it;
        raises SolverError on a status other than SAP_OK, its message ``timed_out(stats)`` on
        SAP_TIMEOUT where the caller can say more (how far its searches got)."""
        from ..errors import SolverError

        stats = dict(zip(self.names, self.stats.get().tolist()))
        if stats["status"] == STATUSES["SAP_TIMEOUT"] and timed_out is not None:
            raise SolverError(timed_out(stats))
        if stats["status"] != 0:
            raise SolverError(STATUS_MESSAGES.get(stats["status"],
                                                  f"the shortest-path kernel ended with status {stats['status']}"))
        return stats


def solve(cost, v_start=None, col_start=None, *, timeout: float | None = None, threads: int = THREADS,
          cluster: int = CLUSTER) -> ClusterResult:
    """Queue the solve of ``cost`` (a C-contiguous (k, m) CuPy array, 1 ≤ k ≤ m, finite) on the
    current stream and return at once. ``v_start`` (m,) of the dual dtype and ``col_start`` (k,)
    int32 (−1: a free row) are the start, every assigned row tight at a minimum of c − v over its
    row; without them v = 0 and every row is searched from (then v ≤ 0 and v = 0 on the columns no
    row takes, as a rectangular problem's certificate needs)."""
    k, m = cost.shape
    dtype = cost.dtype.name
    if dtype not in KERNEL_TYPES:
        raise ValueError(f"unsupported dtype {dtype}; use one of {', '.join(KERNEL_TYPES)}")
    kernels, compile_ms = load(program(threads, cluster))
    return launch(kernels[dtype], (cost.data.ptr, 0, m, 0.0, 1.0), k, m, KERNEL_TYPES[dtype][2], v_start, col_start,
                  timeout=timeout, threads=threads, cluster=cluster, compile_ms=compile_ms)


def launch(kernel, source: tuple, k: int, m: int, dual, v_start=None, col_start=None, *,
           timeout: float | None = None, threads: int = THREADS, cluster: int = CLUSTER,
           compile_ms: float = 0.0) -> ClusterResult:
    """Queue one search kernel (of any cost source) on the current stream: ``source`` is its five
    source arguments (kernels/costs.cuh), ``dual`` the dual dtype; the start as :func:`solve`'s."""
    import cupy

    if not 1 <= k <= m:
        raise ValueError(f"need 1 <= k <= m, got k = {k}, m = {m} (transpose tall problems)")
    v = cupy.zeros(m, dtype=dual) if v_start is None else cupy.array(v_start, dtype=dual)
    col_of_row = cupy.full(k, -1, dtype=np.int32) if col_start is None else cupy.array(col_start, dtype=np.int32)
    stats = cupy.zeros(len(STATS), dtype=np.int64)
    shared = shared_bytes(m, threads, cluster)
    kernel.allow_shared(shared)
    if cluster > 8:  # the portable maximum
        kernel.allow_wide_clusters()
    limit_ns = min(int(timeout * 1e9), 2**63 - 1) if timeout else 2**63 - 1
    stream = current_stream()
    begin, end = reused_events(cupy.cuda.runtime.getDevice(), "sap_cluster", 2)
    begin.record(stream)
    kernel.launch(cluster, threads, (*source, k, m, v.data.ptr, col_of_row.data.ptr, limit_ns, stats.data.ptr),
                  shared=shared, stream=stream)
    end.record(stream)
    return ClusterResult(col_of_row, v, stats, (begin, end), compile_ms)
