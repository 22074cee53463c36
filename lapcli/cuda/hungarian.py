"""The classical kernel (kernels/hungarian.cu) through CuPy: compile once per process, plan the
cooperative launch on the current device, hold one solve's device state in one allocation, build
the work matrix on the device, and read the kernel's status, clocks and counts back.

The engines ``cuda``, ``cuda-stepwise`` and ``cuda-sap`` launch through this module; a host matrix
that is its own work matrix may go through the driver API instead (lapcli.cuda.hungarian_driver).
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np

from ..errors import SolverError
from ..steps import AUCTION_PATIENCE, AUCTION_ROUNDS, STEP_NAMES, StepStat
from .hungarian_abi import (
    BLOCK_SIZE,
    STATE_POINTERS,
    STATUS_MESSAGES,
    STEPWISE_KERNELS,
    LaunchPlan,
    buffer_layout,
    kernel_defines,
    kernel_name,
    kernel_source,
    launch_bytes,
    pack_state,
    plan_arena,
    plan_from_occupancy,
)


@lru_cache(maxsize=None)
def compiled_module(dtype: str, stepwise: bool = False, block_size: int = BLOCK_SIZE):
    """Compile the kernels of one dtype once per process; return (module, compile_ms)."""
    import cupy

    functions = STEPWISE_KERNELS if stepwise else ("hungarian",)
    start = time.perf_counter()
    module = cupy.RawModule(
        code=kernel_source(),
        options=("-std=c++17", *kernel_defines(block_size)),
        name_expressions=[kernel_name(f, dtype) for f in functions],
        enable_cooperative_groups=not stepwise,
    )
    for function in functions:
        module.get_function(kernel_name(function, dtype))
    return module, (time.perf_counter() - start) * 1e3

def plan_launch(kernel, size: int, cost_itemsize: int, block_size: int, blocks_per_sm: int) -> LaunchPlan:
    """Grid = co-resident blocks (occupancy × SMs, capped by blocks_per_sm, by the rows, and to
    half the SMs up to HALF_GRID_UP_TO)."""
    import cupy

    device = cupy.cuda.Device()
    return plan_from_occupancy(
        size, cost_itemsize, block_size, blocks_per_sm, device.attributes["MultiProcessorCount"],
        device.attributes["MaxSharedMemoryPerBlockOptin"],
        lambda shared: cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block_size, shared))

def allow_shared_memory(kernel, plan: LaunchPlan) -> None:
    """Above 48 KB of dynamic shared memory a kernel must opt in (only tiny GPUs with huge n)."""
    if plan.shared_bytes > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = plan.shared_bytes

def check_memory_before_upload(problem, blocks_per_sm: int) -> None:
    """Refuse before anything is copied: the launch's bytes with the widest cost type the work
    matrix can have, plus the uploaded input where it is not the work matrix itself."""
    import cupy

    blocks = max(1, min(problem.size, cupy.cuda.Device().attributes["MultiProcessorCount"] * blocks_per_sm))
    if work_is_the_input(problem):  # n = 131,072 int32 on an H200: 68.7 GB of costs + 68.7 GB of zeros
        check_device_memory(launch_bytes(problem.size, 4, blocks))
        return
    itemsize = 4 if problem.original.dtype.itemsize <= 2 else 8
    upload_bytes = 0 if problem.xp is cupy else problem.original.nbytes
    check_device_memory(launch_bytes(problem.size, itemsize, blocks) + upload_bytes)


def work_is_the_input(problem) -> bool:
    """A square int32 matrix minimised in int32 is its own work matrix (problem._integer_work
    casts with copy=False): the device holds one copy of it, not an upload and a work matrix."""
    original = problem.original
    return (original.dtype == np.int32 and original.shape[0] == original.shape[1] and not problem.maximize
            and problem.requested_dtype in (None, "int32"))


def free_device_bytes() -> int:
    """Free device memory, counting what CuPy's pool holds but does not use."""
    import cupy

    free, _total = cupy.cuda.runtime.memGetInfo()
    return free + cupy.get_default_memory_pool().free_bytes()


def check_device_memory(bytes_needed: int, free: int | None = None) -> None:
    """Fail before allocating when the solve cannot fit, naming what would."""
    free = free_device_bytes() if free is None else free
    if bytes_needed > free:
        raise SolverError(
            f"not enough GPU memory: the CUDA solver needs {bytes_needed / 2**20:.0f} MiB, "
            f"{free / 2**20:.0f} MiB are free; try --dtype float32 or int32 (halves the matrix) "
            "or --solver scipy"
        )


class DeviceState:
    """The device buffers of one solve and the packed State struct that points at them."""

    def __init__(self, cost, plan: LaunchPlan, dtype: str, eps: float, timeout: float | None,
                 auction_rounds: int = AUCTION_ROUNDS, start_only: bool = False,
                 auction_patience: int = AUCTION_PATIENCE):
        import cupy

        size = cost.shape[0]
        self.size = size
        # One allocation, buffers grouped by fill (0, -1, none), two memsets: one buffer and one fill
        # kernel each took ~1 ms of host time at n = 1024 (H100 machine), ahead of the launch.
        arena_layout = plan_arena(buffer_layout(size, plan, dtype))
        arena = cupy.empty(arena_layout.total, dtype=np.uint8)
        stream = cupy.cuda.get_current_stream().ptr
        cupy.cuda.runtime.memsetAsync(arena.data.ptr, 0, arena_layout.zeros_end, stream)
        cupy.cuda.runtime.memsetAsync(arena.data.ptr + arena_layout.zeros_end, 0xFF,
                                      arena_layout.minus_ones_end - arena_layout.zeros_end, stream)
        self.buffers = {"cost": cost}
        for name, (kind, count, _fill) in arena_layout.buffers.items():
            offset = arena_layout.offsets[name]
            self.buffers[name] = arena[offset:offset + count * kind.itemsize].view(kind)
        packed = pack_state({name: self.buffers[name].data.ptr for name in STATE_POINTERS}, plan, size, dtype,
                            eps, timeout, auction_rounds, start_only, auction_patience)
        self.struct = cupy.asarray(np.frombuffer(packed, dtype=np.uint8))

    def __getitem__(self, name):
        return self.buffers[name]

    def to_host(self, *names: str) -> dict[str, np.ndarray]:
        """Host copies of the named buffers in one device-to-host copy (of the span that holds them
        all; they share one allocation), waiting for the work queued before it."""
        import cupy

        if "cost" in names:
            raise ValueError("to_host copies the state's own buffers, not the cost matrix")
        views = [self.buffers[name] for name in names]
        begin = min(view.data.ptr for view in views)
        end = max(view.data.ptr + view.nbytes for view in views)
        span = np.empty(end - begin, dtype=np.uint8)
        stream = cupy.cuda.get_current_stream()
        cupy.cuda.runtime.memcpyAsync(span.ctypes.data, begin, end - begin, cupy.cuda.runtime.memcpyDeviceToHost,
                                      stream.ptr)
        stream.synchronize()
        return {name: span[view.data.ptr - begin:view.data.ptr - begin + view.nbytes].view(view.dtype)
                for name, view in zip(names, views)}

@lru_cache(maxsize=None)
def device_name() -> str:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"cuda:{cupy.cuda.Device().id} ({name})"


def upload(work):
    """Copy a host array to the device through lapcli.cuda.staging's pinned memory (threads copying
    pieces into page-locked memory while earlier pieces' DMAs run): 50 GB/s on the H100 machine
    where a pageable copy reaches 9-17 GB/s and pinning the array in place costs a page walk of
    it (docs/scaling.md). The DMAs are ordered on the current stream."""
    from .staging import upload as staged_upload

    return staged_upload(work)


def device_work(problem):
    """The work matrix on the current device, built there from the uploaded costs (the float
    reduction and padding cost one pass on the GPU instead of several on the host). Its data
    pointer is 16-byte aligned, as step 6's vector loads need: a CuPy view that is not (e.g.
    ``big[1:n*n+1].reshape(n, n)``) is copied."""
    import cupy

    source = problem.original if problem.xp is cupy else upload(problem.original)
    problem.check_entries_on(source, cupy)  # NaN / infinities: one pass on the device, none on the host
    work = problem.work_on(cupy, source=source)
    if work.values.data.ptr % 16:
        work.values = work.values.copy()
    return work


def prepare_launch(problem, work, stepwise: bool, block_size: int, blocks_per_sm: int):
    size = problem.size
    dtype = work.dtype
    was_cached = compiled_module.cache_info().currsize
    module, compile_ms = compiled_module(dtype, stepwise, block_size)
    fresh_compile = compiled_module.cache_info().currsize > was_cached
    first_kernel = module.get_function(kernel_name("hungarian" if not stepwise else "step_4", dtype))
    plan = plan_launch(first_kernel, size, work.values.dtype.itemsize, block_size, blocks_per_sm)
    check_device_memory(plan.bytes_needed - work.values.nbytes)  # the work matrix is on the device already
    return module, dtype, plan, (compile_ms if fresh_compile else 0.0)


def launch_details(plan: LaunchPlan, compile_ms: float, launches: int, **times_ms: float) -> dict:
    """The report's ``details`` for a CUDA solve: launch shape, compile time, copy and kernel times."""
    return {
        "grid": plan.blocks,
        "block": plan.block_size,
        "compile_ms": round(compile_ms, 3),
        **{name: round(value, 3) for name, value in times_ms.items()},
        "device_bytes": plan.bytes_needed,
        "launches": launches,
    }


def check_result(status_word: int, host_columns: np.ndarray) -> None:
    """Raise on a bad status word or when the columns are not a permutation."""
    if status_word != 0:
        raise SolverError(STATUS_MESSAGES.get(status_word, f"the CUDA kernel ended with status {status_word}"))
    if host_columns.min() < 0 or np.bincount(host_columns, minlength=host_columns.size).max() != 1:
        raise SolverError("the CUDA kernel returned an incomplete assignment (a bug, please report it)")


def step_stats(counts, step_ms) -> list[StepStat]:
    """The report's steps 1-6 from the kernel's step counts and times (ms)."""
    return [StepStat(s, STEP_NAMES[s], int(counts[s]), float(step_ms[s])) for s in range(1, 7)]
