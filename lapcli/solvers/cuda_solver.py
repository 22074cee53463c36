"""Launch the cooperative Hungarian kernel (kernels/hungarian.cu) through CuPy.

The host copies the work matrix in, launches ONE cooperative kernel that runs steps 1–6 to the
end, and copies back the assignment, the per-step clocks and a status word. The kernel source is
compiled by NVRTC at first use (no nvcc needed) and cached for the process.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from ..errors import SolverError
from ..report import STEP_NAMES, StepStat
from .base import BackendResult

BLOCK_SIZE = 512
BLOCKS_PER_SM = 1  # one resident block per SM: the cheapest grid.sync() (shared/design.md §4)
MAX_SIZE = 65536  # zeros are packed as (local_row << 16) | column

# working dtype -> (C++ cost type, C++ dual type, NumPy dual type)
KERNEL_TYPES = {
    "int32": ("int", "long long", np.int64),
    "int64": ("long long", "long long", np.int64),
    "float32": ("float", "double", np.float64),
    "float64": ("double", "double", np.float64),
}

STATUS_MESSAGES = {
    1: "step 6 found a non-positive Δ (the zero list is inconsistent; a bug, please report it)",
    2: "the CUDA solver exceeded its time limit",
    3: "the CUDA solver reached its iteration cap (a bug, please report it)",
}


def kernel_source() -> str:
    return resources.files("lapcli").joinpath("kernels/hungarian.cu").read_text()


def kernel_name(dtype: str) -> str:
    cost_type, dual_type, _ = KERNEL_TYPES[dtype]
    return f"hungarian<{cost_type}, {dual_type}>"


@lru_cache(maxsize=None)
def compiled_module(block_size: int = BLOCK_SIZE):
    """Compile all four instantiations once per process; return (module, compile_ms)."""
    import cupy

    start = time.perf_counter()
    module = cupy.RawModule(
        code=kernel_source(),
        options=("-std=c++17", f"-DLAP_BLOCK={block_size}"),
        name_expressions=[kernel_name(d) for d in KERNEL_TYPES],
        enable_cooperative_groups=True,
    )
    for dtype in KERNEL_TYPES:
        module.get_function(kernel_name(dtype))
    return module, (time.perf_counter() - start) * 1e3


@dataclass
class LaunchPlan:
    blocks: int
    block_size: int
    segment_capacity: int
    bytes_needed: int


def plan_launch(kernel, size: int, cost_itemsize: int, block_size: int, blocks_per_sm: int) -> LaunchPlan:
    """Grid = co-resident blocks (occupancy × SMs, capped by blocks_per_sm and by the rows)."""
    import cupy

    device = cupy.cuda.Device()
    sms = device.attributes["MultiProcessorCount"]
    resident = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block_size, 0)
    if resident < 1:
        raise SolverError(f"the kernel cannot be resident with {block_size} threads per block")
    blocks = max(1, min(sms * min(resident, blocks_per_sm), size))
    rows_per_block = math.ceil(size / blocks)
    segment_capacity = rows_per_block * size
    needed = (
        size * size * cost_itemsize  # cost
        + blocks * segment_capacity * 4  # zero segments
        + blocks * size * 8  # step-1 column partial minima
        + size * (2 * 8 + 6 * 4)  # duals, covers, stars, primes, greens
    )
    return LaunchPlan(blocks, block_size, segment_capacity, needed)


def check_device_memory(bytes_needed: int) -> None:
    """Fail before allocating when the solve cannot fit, naming what would."""
    import cupy

    free, _total = cupy.cuda.runtime.memGetInfo()
    free += cupy.get_default_memory_pool().free_bytes()
    if bytes_needed > free:
        raise SolverError(
            f"not enough GPU memory: the CUDA solver needs {bytes_needed / 2**20:.0f} MiB, "
            f"{free / 2**20:.0f} MiB are free; try --dtype float32 or int32 (halves the matrix) "
            "or --solver scipy"
        )


def run(problem, *, timeout: float | None = None, block_size: int = BLOCK_SIZE,
        blocks_per_sm: int = BLOCKS_PER_SM, **_options) -> BackendResult:
    import cupy

    size = problem.size
    if size > MAX_SIZE:
        raise SolverError(f"the CUDA solver handles n ≤ {MAX_SIZE}; use --solver scipy for n = {size}")
    module, compile_ms = compiled_module(block_size)
    first_compile = compiled_module.cache_info().hits == 0
    work = problem.work
    dtype = str(work.dtype)
    kernel = module.get_function(kernel_name(dtype))
    plan = plan_launch(kernel, size, work.dtype.itemsize, block_size, blocks_per_sm)
    check_device_memory(plan.bytes_needed)
    _, _, dual_dtype = KERNEL_TYPES[dtype]

    start, copied_in, launched, solved, copied_out = (cupy.cuda.Event() for _ in range(5))
    start.record()
    cost = cupy.asarray(work)  # no copy when the input already lives on the device
    copied_in.record()
    u = cupy.empty(size, dtype=dual_dtype)
    v = cupy.empty(size, dtype=dual_dtype)
    partial = cupy.empty(plan.blocks * size, dtype=dual_dtype)
    zeros = cupy.empty(plan.blocks * plan.segment_capacity, dtype=np.uint32)
    zeros_size = cupy.zeros(plan.blocks, dtype=np.int32)
    cover_row = cupy.zeros(size, dtype=np.int32)
    cover_col = cupy.zeros(size, dtype=np.int32)
    column_of_star_at_row = cupy.full(size, -1, dtype=np.int32)
    row_of_star_at_column = cupy.full(size, -1, dtype=np.int32)
    column_of_prime_at_row = cupy.full(size, -1, dtype=np.int32)
    row_of_green_at_column = cupy.full(size, -1, dtype=np.int32)
    slots = cupy.zeros(12, dtype=np.int32)
    step_ns = cupy.zeros(7, dtype=np.uint64)
    step_count = cupy.zeros(7, dtype=np.int32)
    status = cupy.full(1, -1, dtype=np.int32)
    time_limit_ns = np.uint64(min(int((timeout if timeout else 1e9) * 1e9), 2**63))
    max_rounds = np.int64(min(4 * size**3 + 1000, 2**62))
    launched.record()
    kernel(
        (plan.blocks,), (plan.block_size,),
        (cost, np.int32(size), dual_dtype(problem.eps), u, v, partial, zeros,
         np.int64(plan.segment_capacity), zeros_size, cover_row, cover_col,
         column_of_star_at_row, row_of_star_at_column, column_of_prime_at_row,
         row_of_green_at_column, slots, step_ns, step_count, status, time_limit_ns, max_rounds),
    )
    solved.record()
    column_of_star = column_of_star_at_row.get()
    clocks_ns, counts, status_word = step_ns.get(), step_count.get(), int(status.get()[0])
    copied_out.record()
    copied_out.synchronize()

    if status_word != 0:
        raise SolverError(STATUS_MESSAGES.get(status_word, f"the CUDA kernel ended with status {status_word}"))
    if np.unique(column_of_star).size != size or column_of_star.min() < 0:
        raise SolverError("the CUDA kernel returned an incomplete assignment (a bug, please report it)")
    rows, cols = problem.assignment_from_work(column_of_star)
    steps = [StepStat(s, STEP_NAMES[s], int(counts[s]), float(clocks_ns[s]) / 1e6) for s in range(1, 7)]
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    details = {
        "grid": plan.blocks,
        "block": plan.block_size,
        "compile_ms": round(compile_ms, 3) if first_compile else 0.0,
        "h2d_ms": round(cupy.cuda.get_elapsed_time(start, copied_in), 3),
        "kernel_ms": round(cupy.cuda.get_elapsed_time(launched, solved), 3),
        "d2h_ms": round(cupy.cuda.get_elapsed_time(solved, copied_out), 3),
        "device_bytes": plan.bytes_needed,
    }
    return BackendResult(rows=rows, cols=cols, device=f"cuda:{cupy.cuda.Device().id} ({name})",
                         dtype=dtype, steps=steps, details=details)
