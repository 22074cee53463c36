"""The classical kernel (kernels/hungarian.cu) through the CUDA driver API, without CuPy: the
launcher of a cold ``lap solve`` of a host matrix (lapcli.cuda.driver says why).

Same kernel, State, statuses and step clocks as the CuPy launcher (lapcli.cuda.hungarian), which
stays in charge of device (CuPy) inputs, of host inputs that need preparing (floats, other integer
types, k × m, maximising: it prepares them on the device) and of host inputs above
``HOST_MAX_BYTES``, where lapcli.cuda.staging's pinned upload is faster than the pageable copy here.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .compiler import compile_options, load_or_compile
from .driver import (
    DeviceArena,
    PointerArg,
    _check,
    _driver,
    copy_out,
    early_start,
    kernel_arguments,
    open_gpu,
)
from .hungarian import (
    check_device_memory,
    check_result,
    launch_details,
    work_is_the_input,
)
from .hungarian_abi import (
    AUCTION_ROUNDS,
    BLOCK_SIZE,
    BLOCKS_PER_SM,
    STATE_POINTERS,
    buffer_layout,
    kernel_defines,
    kernel_name,
    kernel_source,
    pack_state,
    plan_from_occupancy,
)

# H100 machine, warm, int32 (docs/dispatch.md): the pageable copy here takes 0.5 / 9.2 / 37 ms at
# n = 1024 / 4096 / 8192 where CuPy's pinned upload took 0.7 / 4.1 / 10 ms.
HOST_MAX_BYTES = 256 << 20  # n = 8192 int32: above, the pinned upload saves more than CuPy's start-up costs
SMALL_BYTES = 16 << 20  # n = 2048 int32: below, the two copies cost about the same
KERNELS = ("hungarian", "row_min_slack")


def usable(problem) -> bool:
    """This launcher serves ``problem`` by default: a host matrix that is its own work matrix
    (square int32, minimised: no preparation pass, which the CuPy launcher runs on the device),
    with cuda.bindings installed, and either CuPy not imported yet in this process (its import
    and set-up would cost more than any copy saves: a one-shot solve) or a matrix small enough
    (SMALL_BYTES) that the pageable copy costs no more than CuPy's ring. A test may launch any
    host input through it (``launch``): its work matrix is then prepared on the host."""
    if problem.xp is not np or not work_is_the_input(problem) or problem.original.nbytes > HOST_MAX_BYTES:
        return False
    if "cupy" in sys.modules and problem.original.nbytes > SMALL_BYTES:
        return False
    return _has_driver_bindings()


@lru_cache(maxsize=1)
def _has_driver_bindings() -> bool:
    """cuda.bindings is installed (asked once: a module search costs tens of µs a solve)."""
    return importlib.util.find_spec("cuda.bindings") is not None


def functions_of(gpu, dtype: str, block_size: int) -> tuple[dict, float]:
    """The kernels of one dtype on ``gpu``, loaded from the cubin cache or compiled; (functions, compile ms)."""
    import time

    key = ("hungarian", dtype, block_size)
    if key in gpu.kernels:
        return gpu.kernels[key], 0.0
    start = time.perf_counter()
    names = {name: kernel_name(name, dtype) for name in KERNELS}
    options = compile_options(kernel_defines(block_size), gpu.arch)
    gpu.kernels[key] = load_or_compile(gpu, "hungarian", kernel_source(), options, names)
    return gpu.kernels[key], (time.perf_counter() - start) * 1e3


@dataclass
class DriverSolve:
    """What one launch left: the assignment, the duals, the steps' counts and clocks, the
    certificate's per-row minimum slack (read on the device) and the report's details."""

    columns: np.ndarray
    u: np.ndarray
    v: np.ndarray
    counts: np.ndarray
    clocks_ns: np.ndarray
    row_min_slack: np.ndarray
    details: dict
    device: str


def launch(work, *, timeout: float | None = None, device: int | None = None, block_size: int = BLOCK_SIZE,
           blocks_per_sm: int = BLOCKS_PER_SM, auction_rounds: int = AUCTION_ROUNDS) -> DriverSolve:
    """Solve a host work matrix (lapcli.problem.WorkMatrix): upload, one cooperative launch, the
    certificate's read pass on the device, the assignment and duals back."""
    driver = _driver()
    gpu = open_gpu(device if device is not None else 0)
    gpu.make_current()
    host = np.ascontiguousarray(work.values)
    size, dtype = host.shape[0], work.dtype
    functions, compile_ms = functions_of(gpu, dtype, block_size)
    plan = plan_from_occupancy(size, host.itemsize, block_size, blocks_per_sm, gpu.sms, gpu.max_shared,
                               lambda shared: gpu.resident_blocks(functions["hungarian"], block_size, shared))
    check_device_memory(plan.bytes_needed, gpu.free_bytes())
    layout = buffer_layout(size, plan, dtype)
    dual = layout["u"][0]
    sizes = {"cost": host.nbytes, **{name: kind.itemsize * count for name, (kind, count, _) in layout.items()},
             "state": 512, "row_min_slack": dual.itemsize * size}
    arena = DeviceArena(sizes)
    events = [_check(driver.cuEventCreate(0)) for _ in range(4)]
    try:
        _check(driver.cuMemsetD8(arena.base, 0, arena.nbytes))
        for name, (kind, count, fill) in layout.items():
            if fill == -1:
                _check(driver.cuMemsetD32(arena[name], 0xFFFFFFFF, count))
        state = pack_state({"cost": arena["cost"], **{name: arena[name] for name in STATE_POINTERS if name != "cost"}},
                           plan, size, dtype, work.eps, timeout, auction_rounds)
        state_host = np.frombuffer(state, dtype=np.uint8)
        _check(driver.cuMemcpyHtoD(arena["state"], state_host.ctypes.data, len(state)))
        _check(driver.cuEventRecord(events[0], 0))
        _check(driver.cuMemcpyHtoD(arena["cost"], host.ctypes.data, host.nbytes))
        _check(driver.cuEventRecord(events[1], 0))
        if plan.shared_bytes > 48 * 1024:
            _check(driver.cuFuncSetAttribute(
                functions["hungarian"], driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                plan.shared_bytes))
        holders, params = kernel_arguments(PointerArg(arena["state"]))
        _check(driver.cuLaunchCooperativeKernel(functions["hungarian"], plan.blocks, 1, 1, plan.block_size, 1, 1,
                                                plan.shared_bytes, 0, params.ctypes.data))
        _check(driver.cuEventRecord(events[2], 0))
        status_word = int(copy_out(arena["status"], np.int32, 1)[0])
        clocks_ns = copy_out(arena["step_ns"], np.uint64, 7)
        counts = copy_out(arena["step_count"], np.int32, 7)
        columns = copy_out(arena["column_of_star_at_row"], np.int32, size)
        u, v = copy_out(arena["u"], dual, size), copy_out(arena["v"], dual, size)
        _check(driver.cuEventRecord(events[3], 0))
        _check(driver.cuEventSynchronize(events[3]))
        elapsed = lambda a, b: float(_check(driver.cuEventElapsedTime(events[a], events[b])))  # noqa: E731
        details = launch_details(plan, compile_ms, launches=2, h2d_ms=elapsed(0, 1), kernel_ms=elapsed(1, 2),
                                 d2h_ms=elapsed(2, 3))
        details["launcher"] = "driver"
        details["auction_rounds"] = int(counts[0])
        details["driver_started_early"] = early_start.started_early()
        check_result(status_word, columns)
        # the certificate's read pass, on the device that holds the matrix (a block per row)
        holders, params = kernel_arguments(PointerArg(arena["cost"]), PointerArg(arena["u"]), PointerArg(arena["v"]),
                                           size, PointerArg(arena["row_min_slack"]))
        _check(driver.cuLaunchKernel(functions["row_min_slack"], min(size, 4 * gpu.sms), 1, 1, block_size, 1, 1, 0, 0,
                                     params.ctypes.data, 0))
        row_minima = copy_out(arena["row_min_slack"], dual, size)
    finally:
        for event in events:
            driver.cuEventDestroy(event)
        arena.free()
    return DriverSolve(columns, u, v, counts, clocks_ns, row_minima, details, gpu.name)
