"""Engines ``cuda`` and ``cuda-stepwise``: the Hungarian kernels of kernels/hungarian.cu through CuPy.

``run`` (engine ``cuda``): copy the costs in, build the work matrix on the device, launch ONE
cooperative kernel that runs steps 1–6 to the end, prove the answer with its duals on the device
(lapcli/certificate.py), copy back the assignment, the duals, the per-step clocks and a status.

``run_stepwise`` (solver ``cuda-stepwise``): the same device code, one kernel per step, driven by
a host loop that reads the flags back after steps 2, 3 and 4, as LAP19 and HyLAC run; each step is
timed with CUDA events. It is the baseline that shows what the single launch buys.

The source is compiled by NVRTC at first use (no nvcc needed) and cached for the process.
"""

from __future__ import annotations

import math
import struct
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

from ..errors import SolverError
from .base import EngineResult, certified_result
from .numpy_hungarian import AUCTION_PATIENCE, AUCTION_ROUNDS
from .steps import STEP_NAMES, StepStat

BLOCK_SIZE = 512
BLOCKS_PER_SM = 1  # one resident block per SM: the cheapest grid.sync() (shared/design.md §4)
ZERO_BITS = 32  # a zero is packed in 32 bits: (local_row << column_bits) | column
# Up to this n the grid has one block per two SMs: the matrix sits in L2, the solve is a chain of
# grid.sync()s, and a barrier over half the blocks is cheaper (a step-4 round 4.7 -> 4.0 us). Kernel
# 5-11 % faster at n = 1024 and 2048 on the H200 (auction start; 7-12 % on the H100 before it); at
# n = 4096 every smaller grid was slower (docs/benchmarks.md).
HALF_GRID_UP_TO = 2048

# working dtype -> (C++ cost type, C++ dual type, NumPy dual type, struct code of the dual)
KERNEL_TYPES = {
    "int32": ("int", "long long", np.int64, "q"),
    "int64": ("long long", "long long", np.int64, "q"),
    "float32": ("float", "double", np.float64, "d"),
    "float64": ("double", "double", np.float64, "d"),
}
STEPWISE_KERNELS = ("step_1_rows", "step_1_columns", "step_1_zeros", "step_1_auction_columns", "step_1_bid",
                    "step_1_claim", "step_1_win", "step_1_auction_zeros", "step_2_pick", "step_2_star", "step_3",
                    "step_4", "step_5a", "step_5b", "step_6_min", "step_6_shift")
EPOCH_KERNELS = ("step_1_bid", "step_2_pick", "step_3", "step_4")  # stepwise kernels that take the flag slot's epoch
SHARED_KERNELS = ("hungarian", "step_2_pick", "step_4")  # kernels that use the row_choice shared array
# What the kernel and this launcher share, defined HERE only: compiled_module passes them to the
# kernel as -D defines (kernel_defines), and the kernel refuses to compile without them.
# Flag slots: what a phase's threads report, read by every thread after the barrier.
SLOTS = {
    "SLOT_CHANGED": 0,  # step 2: a row picked a free zero (a star follows) / step 4: a row was covered
    "SLOT_PATH": 1,  # step 4: a primed zero in a row without a star (go to step 5)
    "SLOT_ABORT": 2,  # step 4: timeout or iteration cap (the value is the status)
    "SLOT_STARS": 3,  # step 3: number of starred columns / step 1 by auction: number of free rows
    "SLOT_INTS": 4,  # ints per slot
    "SLOT_COUNT": 3,  # rotating slots: one is cleared two phases after it was last read
}
STATUSES = {  # status word -> (define, message)
    0: ("STATUS_OK", ""),
    1: ("STATUS_DELTA_NOT_POSITIVE",
        "step 6 found a non-positive Δ (the zero list is inconsistent; a bug, please report it)"),
    2: ("STATUS_TIMEOUT", "the CUDA solver exceeded its time limit"),
    3: ("STATUS_ITERATION_CAP", "the CUDA solver reached its iteration cap (a bug, please report it)"),
    4: ("STATUS_PATH_WALK", "a step-5 path walk in the CUDA solver met an inconsistent path (a bug, please report it)"),
}
STATUS_MESSAGES = {code: message for code, (_, message) in STATUSES.items() if code}
SLOT_CHANGED, SLOT_PATH, SLOT_ABORT, SLOT_STARS, SLOT_INTS, SLOT_COUNT = SLOTS.values()


def kernel_defines(block_size: int = BLOCK_SIZE) -> tuple[str, ...]:
    """The -D options every compile of hungarian.cu gets: block size, slots, statuses."""
    return (f"-DLAP_BLOCK={block_size}", *(f"-D{name}={value}" for name, value in SLOTS.items()),
            *(f"-D{name}={code}" for code, (name, _) in STATUSES.items()))

# struct State<T, D> of the kernel: 25 pointers, then the scalars (packed by DeviceState in this order).
STATE_SCALARS = ("segment_capacity", "eps", "k", "column_bits", "time_limit_ns", "max_rounds", "auction_rounds",
                 "auction_patience", "start_only")
STATE_POINTERS = ("cost", "u", "v", "v_masked", "row_min", "partial", "new_cols", "incremental", "zeros", "zeros_size", "cover_row",
                  "cover_col", "column_of_star_at_row", "row_of_star_at_column", "column_of_prime_at_row",
                  "row_of_green_at_column", "column_claim", "uncovered_round", "slots", "step_ns", "step_count",
                  "status", "bid_of_column", "bid_of_row", "bid_column_of_row")


def kernel_source() -> str:
    return resources.files("lapcli").joinpath("kernels/hungarian.cu").read_text()


def kernel_name(function: str, dtype: str) -> str:
    cost_type, dual_type, _, _ = KERNEL_TYPES[dtype]
    return f"{function}<{cost_type}, {dual_type}>"


@lru_cache(maxsize=None)
def compiled_module(dtype: str, stepwise: bool = False, block_size: int = BLOCK_SIZE, defines: tuple = ()):
    """Compile the kernels of one dtype once per process; return (module, compile_ms).
    ``defines`` (e.g. ("LAP_UNROLL=4",)) exist for tuning experiments."""
    import cupy

    functions = STEPWISE_KERNELS if stepwise else ("hungarian",)
    start = time.perf_counter()
    module = cupy.RawModule(
        code=kernel_source(),
        options=("-std=c++17", *kernel_defines(block_size), *(f"-D{d}" for d in defines)),
        name_expressions=[kernel_name(f, dtype) for f in functions],
        enable_cooperative_groups=not stepwise,
    )
    for function in functions:
        module.get_function(kernel_name(function, dtype))
    return module, (time.perf_counter() - start) * 1e3


@dataclass
class LaunchPlan:
    blocks: int
    block_size: int
    segment_capacity: int
    bytes_needed: int
    column_bits: int
    shared_bytes: int  # dynamic shared memory per block: row_choice, one int per row of the block


def column_bits(size: int) -> int:
    """Bits of a packed zero's column: enough for columns 0 .. size − 1."""
    return max(1, (size - 1).bit_length())


def check_zero_packing(size: int, blocks: int) -> None:
    """A zero is (local_row << column_bits) | column in 32 bits: the local rows of a block
    (ceil(size / blocks)) must fit the bits the columns leave. k = 131,072 on 132 blocks needs
    17 + 10 bits; only a GPU with very few SMs and a huge k runs out."""
    rows = math.ceil(size / blocks)
    if (rows - 1).bit_length() + column_bits(size) > ZERO_BITS:
        raise SolverError(f"the CUDA solver cannot index n = {size} on {blocks} blocks "
                          f"({rows} rows per block); use --solver scipy")


def row_choice_bytes(size: int, blocks: int) -> int:
    """Shared memory of the kernel's row_choice array: one int per row a block owns."""
    return 4 * math.ceil(size / blocks)


def plan_launch(kernel, size: int, cost_itemsize: int, block_size: int, blocks_per_sm: int) -> LaunchPlan:
    """Grid = co-resident blocks (occupancy × SMs, capped by blocks_per_sm, by the rows, and to
    half the SMs up to HALF_GRID_UP_TO)."""
    import cupy

    device = cupy.cuda.Device()
    return plan_from_occupancy(
        size, cost_itemsize, block_size, blocks_per_sm, device.attributes["MultiProcessorCount"],
        device.attributes["MaxSharedMemoryPerBlockOptin"],
        lambda shared: cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, block_size, shared))


def plan_from_occupancy(size: int, cost_itemsize: int, block_size: int, blocks_per_sm: int, sms: int,
                        max_shared: int, resident_blocks) -> LaunchPlan:
    """The plan from the device's numbers; ``resident_blocks(shared_bytes)`` asks the occupancy
    calculator (CuPy's or the driver's) how many blocks an SM holds."""
    widest = row_choice_bytes(size, min(sms, size))  # the most a block of a one-per-SM grid needs
    if widest > max_shared - 4096:
        raise SolverError(f"the CUDA solver cannot hold n = {size} rows on {sms} multiprocessors; use --solver scipy")
    resident = resident_blocks(widest)
    if resident < 1:
        raise SolverError(f"the kernel cannot be resident with {block_size} threads per block")
    blocks = max(1, min(sms * min(resident, blocks_per_sm), size))
    if size <= HALF_GRID_UP_TO:
        blocks = max(1, min(blocks, sms // 2))
    check_zero_packing(size, blocks)
    segment_capacity = math.ceil(size / blocks) * size
    return LaunchPlan(blocks, block_size, segment_capacity, launch_bytes(size, cost_itemsize, blocks),
                      column_bits(size), row_choice_bytes(size, blocks))


def allow_shared_memory(kernel, plan: LaunchPlan) -> None:
    """Above 48 KB of dynamic shared memory a kernel must opt in (only tiny GPUs with huge n)."""
    if plan.shared_bytes > 48 * 1024:
        kernel.max_dynamic_shared_size_bytes = plan.shared_bytes


def launch_bytes(size: int, cost_itemsize: int, blocks: int) -> int:
    """Device bytes of one solve: the matrix, the zero segments, step 1's per-block column minima
    and the per-row/column arrays."""
    segment_capacity = math.ceil(size / blocks) * size
    return (
        size * size * cost_itemsize  # cost
        + blocks * segment_capacity * 4  # zero segments (a zero is 4 bytes)
        + blocks * size * 8  # step-1 column minima per block
        + size * (6 * 8 + 10 * 4)  # u, v, v_masked, row_min, auction bids (2); covers, stars, primes, greens,
        # new_cols, claims, rounds, the auction's bid columns
    )


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


@dataclass(frozen=True)
class ArenaLayout:
    """Where DeviceState's buffers lie in its one allocation: the zero-filled ones in
    [0, zeros_end), the -1-filled ones in [zeros_end, minus_ones_end), the rest after."""

    buffers: dict  # name -> (dtype, elements, fill), in allocation order
    offsets: dict  # name -> byte offset, a multiple of 256 (as cudaMalloc aligns)
    zeros_end: int
    minus_ones_end: int
    total: int


def plan_arena(layout: dict) -> ArenaLayout:
    """Order ``layout`` (buffer_layout's) by fill and give each buffer a 256-byte aligned offset.
    A -1 fill is written as bytes 0xFF, which is -1 only for signed integers: others are refused."""
    order = {0: 0, -1: 1, None: 2}
    ordered = dict(sorted(layout.items(), key=lambda item: order[item[1][2]]))
    offsets, total, ends = {}, 0, {0: 0}
    for name, (kind, count, fill) in ordered.items():
        if fill == -1 and np.dtype(kind).kind != "i":
            raise ValueError(f"buffer {name!r} is filled with -1 but is {np.dtype(kind).name}, not a signed integer")
        offsets[name] = total
        total += -(-max(count, 1) * np.dtype(kind).itemsize // 256) * 256
        ends[fill] = total
    return ArenaLayout(ordered, offsets, ends[0], ends.get(-1, ends[0]), total)


def buffer_layout(size: int, plan: LaunchPlan, dtype: str) -> dict[str, tuple[np.dtype, int, int | None]]:
    """Every device buffer of a solve but the costs: name -> (dtype, elements, fill), where fill
    is 0, -1 or None (left as allocated: written by the kernel before it is read)."""
    dual = np.dtype(KERNEL_TYPES[dtype][2])
    i32 = np.dtype(np.int32)
    return {
        "u": (dual, size, None), "v": (dual, size, None), "v_masked": (dual, size, None),
        "row_min": (dual, size, None), "partial": (dual, plan.blocks * size, None),
        "new_cols": (i32, size, None), "incremental": (i32, 2, 0),
        "zeros": (np.dtype(np.uint32), plan.blocks * plan.segment_capacity, None),
        "zeros_size": (i32, plan.blocks, 0), "cover_row": (i32, size, 0), "cover_col": (i32, size, 0),
        "column_of_star_at_row": (i32, size, -1), "row_of_star_at_column": (i32, size, -1),
        "column_of_prime_at_row": (i32, size, -1), "row_of_green_at_column": (i32, size, -1),
        "column_claim": (i32, size, None), "uncovered_round": (i32, size, None),  # set by steps 1 and 3
        "slots": (i32, SLOT_INTS * SLOT_COUNT, 0), "step_ns": (np.dtype(np.uint64), 7, 0),
        "step_count": (i32, 7, 0), "status": (i32, 1, 0),
        "bid_of_column": (np.dtype(np.uint64), size, 0), "bid_of_row": (dual, size, None),
        "bid_column_of_row": (i32, size, None),
    }


def pack_state(pointers: dict[str, int], plan: LaunchPlan, size: int, dtype: str, eps: float,
               timeout: float | None, auction_rounds: int = AUCTION_ROUNDS, start_only: bool = False,
               auction_patience: int = AUCTION_PATIENCE) -> bytes:
    """The bytes of struct State<T, D>: the buffers' device addresses, then the scalars.
    ``auction_rounds`` caps step 1's auction (0: the classical step 1; the twin's AUCTION_ROUNDS
    by default, so that the kernel and the twin take the same steps). ``start_only``: the kernel
    returns after step 1 (v and the stars are engine cuda-sap's warm start); ``auction_patience``
    its stopping rule's rounds without fewer free rows (the twin's AUCTION_PATIENCE by default)."""
    _, _, dual_dtype, dual_code = KERNEL_TYPES[dtype]
    time_limit_ns = min(int((timeout if timeout else 1e9) * 1e9), 2**63)
    max_rounds = min(4 * size**3 + 1000, 2**62)
    return struct.pack(
        f"<{len(STATE_POINTERS)}Qq{dual_code}iiQqiii",
        *(pointers[name] for name in STATE_POINTERS),
        plan.segment_capacity, dual_dtype(eps).item(), size, plan.column_bits, time_limit_ns, max_rounds,
        auction_rounds, auction_patience, int(start_only),
    )


@lru_cache(maxsize=None)
def device_name() -> str:
    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return f"cuda:{cupy.cuda.Device().id} ({name})"


def upload(work):
    """Copy a host array to the device through lapcli.staging's pinned memory (threads copying
    pieces into page-locked memory while earlier pieces' DMAs run): 50 GB/s on the H100 machine
    where a pageable copy reaches 9-17 GB/s and pinning the array in place costs a page walk of
    it (issue #15, docs/scaling.md). The DMAs are ordered on the current stream."""
    from ..staging import upload as staged_upload

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


def prepare_launch(problem, work, stepwise: bool, block_size: int, blocks_per_sm: int, defines: tuple = ()):
    size = problem.size
    dtype = work.dtype
    was_cached = compiled_module.cache_info().currsize
    module, compile_ms = compiled_module(dtype, stepwise, block_size, defines)
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


def finish(problem, work, state, status_word: int, counts, step_ms, engine: str, details: dict) -> EngineResult:
    """Raise on a bad status or a non-permutation; certify on the device; map back; the steps."""
    column_of_star = state["column_of_star_at_row"]
    check_result(status_word, column_of_star.get())
    return certified_result(problem, work, column_of_star, state["u"], state["v"], engine=engine,
                            device=device_name(), steps=step_stats(counts, step_ms), details=details)


def run(problem, *, timeout: float | None = None, device: int | None = None, block_size: int = BLOCK_SIZE,
        blocks_per_sm: int = BLOCKS_PER_SM, defines: tuple = (), launcher: str | None = None,
        auction_rounds: int = AUCTION_ROUNDS, **_options) -> EngineResult:
    """Engine ``cuda``: one cooperative launch. ``launcher``: "driver" (the driver API, no CuPy:
    lapcli/engines/cuda_driver.py) or "cupy"; by default the driver for host inputs it serves.
    ``auction_rounds`` (0: the classical step 1) and ``defines`` exist for experiments."""
    from . import cuda_driver

    if launcher is None:
        launcher = "driver" if not defines and cuda_driver.usable(problem) else "cupy"
    if launcher == "driver":
        return cuda_driver.run(problem, timeout=timeout, device=device, block_size=block_size,
                               blocks_per_sm=blocks_per_sm, auction_rounds=auction_rounds)
    return run_with_cupy(problem, timeout=timeout, device=device, block_size=block_size,
                         blocks_per_sm=blocks_per_sm, defines=defines, auction_rounds=auction_rounds)


def run_with_cupy(problem, *, timeout: float | None, device: int | None, block_size: int, blocks_per_sm: int,
                  defines: tuple, auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """The CuPy launcher: device inputs stay where they are, host inputs go through lapcli.staging."""
    import cupy

    with cupy.cuda.Device(device if device is not None else cupy.cuda.Device().id):
        start, copied_in, launched, solved, copied_out = (cupy.cuda.Event() for _ in range(5))
        check_memory_before_upload(problem, blocks_per_sm)
        start.record()
        work = device_work(problem)  # no copy when the input already lives on the device
        copied_in.record()
        module, dtype, plan, compile_ms = prepare_launch(problem, work, False, block_size, blocks_per_sm, defines)
        kernel = module.get_function(kernel_name("hungarian", dtype))
        allow_shared_memory(kernel, plan)
        state = DeviceState(work.values, plan, dtype, work.eps, timeout, auction_rounds)
        launched.record()
        kernel((plan.blocks,), (plan.block_size,), (state.struct,), shared_mem=plan.shared_bytes)
        solved.record()
        counters = state.to_host("step_ns", "step_count", "status")
        clocks_ns, counts, status_word = counters["step_ns"], counters["step_count"], int(counters["status"][0])
        copied_out.record()
        copied_out.synchronize()
        details = launch_details(
            plan, compile_ms, launches=1,
            h2d_ms=cupy.cuda.get_elapsed_time(start, copied_in),
            kernel_ms=cupy.cuda.get_elapsed_time(launched, solved),
            d2h_ms=cupy.cuda.get_elapsed_time(solved, copied_out),
        )
        details["launcher"] = "cupy"
        details["auction_rounds"] = int(counts[0])
        return finish(problem, work, state, status_word, counts, clocks_ns / 1e6, "cuda", details)


def run_stepwise(problem, *, timeout: float | None = None, device: int | None = None,
                 block_size: int = BLOCK_SIZE, blocks_per_sm: int = BLOCKS_PER_SM,
                 auction_rounds: int = AUCTION_ROUNDS, **_options) -> EngineResult:
    """Engine ``cuda-stepwise``: one launch per step from a host loop, steps timed with CUDA events."""
    import cupy

    with cupy.cuda.Device(device if device is not None else cupy.cuda.Device().id):
        return _run_stepwise(problem, timeout, block_size, blocks_per_sm, auction_rounds)


def _run_stepwise(problem, timeout, block_size, blocks_per_sm, auction_rounds) -> EngineResult:
    import cupy

    check_memory_before_upload(problem, blocks_per_sm)
    start, copied_in = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    work = device_work(problem)
    copied_in.record()
    module, dtype, plan, compile_ms = prepare_launch(problem, work, True, block_size, blocks_per_sm)
    kernels = {name: module.get_function(kernel_name(name, dtype)) for name in STEPWISE_KERNELS}
    for name in SHARED_KERNELS[1:]:
        allow_shared_memory(kernels[name], plan)
    grid, block = (plan.blocks,), (plan.block_size,)
    state = DeviceState(work.values, plan, dtype, work.eps, None, auction_rounds)
    args = (state.struct,)
    timed: list[tuple[int, object, object]] = []  # (step, start event, end event)
    counts = [0] * 7
    launches = 0
    deadline = time.perf_counter() + timeout if timeout else math.inf

    def launch_step(step: int, names: tuple[str, ...], epoch: int | None = None, count: bool = True):
        nonlocal launches
        begin, end = cupy.cuda.Event(), cupy.cuda.Event()
        begin.record()
        for name in names:
            shared = plan.shared_bytes if name in SHARED_KERNELS else 0
            kernels[name](grid, block, (state.struct, np.int32(epoch)) if name in EPOCH_KERNELS else args,
                          shared_mem=shared)
            launches += 1
        end.record()
        timed.append((step, begin, end))
        counts[step] += count

    def read_slot(epoch: int):
        slots = state["slots"].get()  # the host round trip the cooperative launch avoids
        return slots[SLOT_INTS * (epoch % SLOT_COUNT):SLOT_INTS * (epoch % SLOT_COUNT + 1)]

    epoch = 0
    rounds_run = 0
    if auction_rounds > 0 and state.size > 1:  # step 1 by auction, the cooperative kernel's loop
        launch_step(1, ("step_1_auction_columns", "step_1_columns"))
        fewest_free, fewest_at = state.size + 1, 0
        while rounds_run < auction_rounds:
            launch_step(1, ("step_1_bid",), epoch, count=False)
            free_rows = read_slot(epoch)[SLOT_STARS]
            epoch += 1
            if free_rows == 0:
                break
            if free_rows < fewest_free:
                fewest_free, fewest_at = free_rows, rounds_run
            elif rounds_run - fewest_at >= AUCTION_PATIENCE:
                break
            rounds_run += 1
            launch_step(1, ("step_1_claim", "step_1_win"), count=False)
        launch_step(1, ("step_1_auction_zeros",), count=False)
    else:
        launch_step(1, ("step_1_rows", "step_1_columns", "step_1_zeros"))
    while True:  # one pass: the rows pick (the host reads whether any did), then the columns star
        launch_step(2, ("step_2_pick",), epoch)
        picked = read_slot(epoch)[SLOT_CHANGED]
        epoch += 1
        if not picked:
            break
        launch_step(2, ("step_2_star",), count=False)
    status_word = 0
    while status_word == 0:
        launch_step(3, ("step_3",), epoch)
        stars = read_slot(epoch)[SLOT_STARS]
        epoch += 1
        if stars == state.size:
            break
        while True:
            if time.perf_counter() > deadline:
                status_word = 2
                break
            launch_step(4, ("step_4",), epoch)
            flags = read_slot(epoch)
            epoch += 1
            if flags[SLOT_PATH]:
                launch_step(5, ("step_5a", "step_5b"))
                status_word = int(state["status"].get()[0])
                break
            if flags[SLOT_CHANGED]:
                continue
            launch_step(6, ("step_6_min", "step_6_shift"))
            status_word = int(state["status"].get()[0])
            if status_word:
                break
    finished = cupy.cuda.Event()
    finished.record()
    finished.synchronize()
    step_ms = [0.0] * 7
    for step, begin, end in timed:
        step_ms[step] += cupy.cuda.get_elapsed_time(begin, end)
    details = launch_details(
        plan, compile_ms, launches=launches,
        h2d_ms=cupy.cuda.get_elapsed_time(start, copied_in),
        kernel_ms=cupy.cuda.get_elapsed_time(copied_in, finished),  # all launches, host loop included
    )
    details["auction_rounds"] = rounds_run
    return finish(problem, work, state, status_word, counts, step_ms, "cuda-stepwise", details)
