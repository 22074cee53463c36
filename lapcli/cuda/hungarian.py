"""The launcher of the classical kernel (kernels/hungarian.cu): load it through lapcli.cuda.runtime,
plan the cooperative launch on a device, hold one solve's device state in one allocation, launch,
and read the status, clocks and counts back.

The engines ``cuda``, ``cuda-stepwise`` and ``cuda-sap`` hand it a work matrix on the device (a
CuPy array: a device input, or a host input uploaded by lapcli.cuda.staging and prepared on the
device). A host matrix that is its own work matrix may instead be copied by the driver into the
solve's own allocation, without CuPy (lapcli.cuda.hungarian_host): the same state and launch.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..errors import SolverError
from ..steps import AUCTION_PATIENCE, AUCTION_ROUNDS, STEP_NAMES, StepStat
from .hungarian_abi import (
    BLOCK_SIZE,
    EPOCH_KERNELS,
    KERNEL_TYPES,
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
from .runtime import Arena, Program, current_gpu, load

# Each kernel's parameters (lapcli.cuda.runtime.SLOT_CODES): the State pointer, the stepwise
# kernels' flag-slot epoch, and the certificate's read pass (cost, u, v, n, out).
SIGNATURES = {"hungarian": "p", "row_min_slack": "pppip",
              **{name: "pi" if name in EPOCH_KERNELS else "p" for name in STEPWISE_KERNELS}}
STATE_BYTES = 512  # room for struct State (25 pointers and the scalars: 264 bytes)


@lru_cache(maxsize=None)
def program(dtype: str, stepwise: bool = False, block_size: int = BLOCK_SIZE) -> Program:
    """The kernels of one dtype: the cooperative solve and the certificate's read pass, or the
    stepwise kernels (engine cuda-stepwise)."""
    functions = STEPWISE_KERNELS if stepwise else ("hungarian", "row_min_slack")
    return Program("hungarian", kernel_source(), kernel_defines(block_size),
                   tuple((f, kernel_name(f, dtype), SIGNATURES[f]) for f in functions))


def plan_launch(gpu, kernel, size: int, cost_itemsize: int, block_size: int, blocks_per_sm: int) -> LaunchPlan:
    """Grid = co-resident blocks (occupancy × SMs, capped by blocks_per_sm, by the rows, and to
    half the SMs up to HALF_GRID_UP_TO)."""
    return plan_from_occupancy(size, cost_itemsize, block_size, blocks_per_sm, gpu.sms, gpu.max_shared,
                               lambda shared: kernel.resident_blocks(block_size, shared))


def check_memory_before_upload(problem, blocks_per_sm: int) -> None:
    """Refuse before anything is copied: the launch's bytes with the widest cost type the work
    matrix can have, plus the uploaded input where it is not the work matrix itself."""
    import cupy

    blocks = max(1, min(problem.size, current_gpu().sms * blocks_per_sm))
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
    """The device buffers of one solve in one allocation (lapcli.cuda.runtime.Arena) and the
    packed State struct that points at them, filled on ``stream`` with two memsets (one buffer
    and one fill kernel each took ~1 ms of host time at n = 1024, H100 machine).

    ``cost`` is the work matrix (a CuPy array, kept alive with the state), or None: the costs then
    get ``cost_bytes`` in the allocation and the caller copies them in (the host path, whose
    allocation is the driver's, not CuPy's). ``row_min_slack`` adds the certificate's per-row minima."""

    def __init__(self, cost, size: int, plan: LaunchPlan, dtype: str, eps: float, timeout: float | None, *,
                 auction_rounds: int = AUCTION_ROUNDS, start_only: bool = False,
                 auction_patience: int = AUCTION_PATIENCE, stream: int = 0, cost_bytes: int = 0,
                 row_min_slack: bool = False):
        self.size, self.stream, self.cost = size, stream, cost
        layout = buffer_layout(size, plan, dtype)
        layout["state"] = (np.dtype(np.uint8), STATE_BYTES, None)
        if row_min_slack:
            layout["row_min_slack"] = (np.dtype(KERNEL_TYPES[dtype][2]), size, None)
        if cost is None:
            layout["cost"] = (np.dtype(np.uint8), cost_bytes, None)  # last: to_host's spans stay short
        arena_layout = plan_arena(layout)
        self.arena = Arena(arena_layout.offsets, {name: (kind, count) for name, (kind, count, _) in layout.items()},
                           arena_layout.total, on_cupy=cost is not None)
        self.arena.memset(0, arena_layout.zeros_end, 0, stream)
        self.arena.memset(arena_layout.zeros_end, arena_layout.minus_ones_end, 0xFF, stream)
        self.cost_address = self.arena.address("cost") if cost is None else cost.data.ptr
        pointers = {name: self.arena.address(name) for name in STATE_POINTERS if name != "cost"}
        packed = pack_state({"cost": self.cost_address, **pointers}, plan, size, dtype, eps, timeout, auction_rounds,
                            start_only, auction_patience)
        assert len(packed) <= STATE_BYTES
        self.arena.upload("state", np.frombuffer(packed, dtype=np.uint8), stream)
        self.address = self.arena.address("state")

    def __getitem__(self, name):
        """A buffer as a CuPy array (a state on a CuPy work matrix)."""
        return self.arena.array(name)

    def to_host(self, *names: str) -> dict[str, np.ndarray]:
        """Host copies of the named buffers in one copy, after the work queued on the stream."""
        if "cost" in names:
            raise ValueError("to_host copies the state's own buffers, not the cost matrix")
        return self.arena.to_host(names, self.stream)


def start_solve(kernel, plan: LaunchPlan, state: DeviceState) -> None:
    """Queue the one cooperative launch of the whole solve (steps 1-6, or the auction alone)."""
    kernel.allow_shared(plan.shared_bytes)
    kernel.launch(plan.blocks, plan.block_size, (state.address,), shared=plan.shared_bytes, stream=state.stream,
                  cooperative=True)


def start_row_min_slack(kernel, gpu, state: DeviceState, block_size: int = BLOCK_SIZE) -> None:
    """Queue the certificate's read pass over the costs on the device that holds them (a block
    per row): each row's minimum of c − u − v, into the state's row_min_slack."""
    arena = state.arena
    kernel.launch(min(state.size, 4 * gpu.sms), block_size,
                  (state.cost_address, arena.address("u"), arena.address("v"), state.size,
                   arena.address("row_min_slack")), stream=state.stream)


def device_name() -> str:
    return current_gpu().name


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
    """(kernels, dtype, plan, ms spent loading them now) for a work matrix on CuPy's current device."""
    gpu = current_gpu()
    dtype = work.dtype
    kernels, compile_ms = load(program(dtype, stepwise, block_size), gpu)
    first_kernel = kernels["step_4" if stepwise else "hungarian"]
    plan = plan_launch(gpu, first_kernel, problem.size, work.values.dtype.itemsize, block_size, blocks_per_sm)
    check_device_memory(plan.bytes_needed - work.values.nbytes)  # the work matrix is on the device already
    return kernels, dtype, plan, compile_ms


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
