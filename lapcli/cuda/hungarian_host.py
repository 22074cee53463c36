"""A host matrix to the classical kernel without CuPy: the costs copied by the driver into the
solve's own allocation, then the launcher's one launch (lapcli.cuda.hungarian) and the
certificate's read pass on the device. The path of a cold ``lap solve`` (lapcli.cuda.driver says
why CuPy's start-up is worth avoiding there).

Inputs on the device, host inputs that need preparing (floats, other integer types, k × m,
maximising: prepared on the device) and host inputs above ``HOST_MAX_BYTES`` (where
lapcli.cuda.staging's pinned upload is faster than the pageable copy here) go through CuPy.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from .driver import _check, _driver, early_start, open_gpu
from .hungarian import (
    DeviceState,
    check_device_memory,
    check_result,
    launch_details,
    plan_launch,
    program,
    start_row_min_slack,
    start_solve,
    work_is_the_input,
)
from .hungarian_abi import AUCTION_ROUNDS, BLOCK_SIZE, BLOCKS_PER_SM
from .runtime import Event, load

# H100 machine, warm, int32 (docs/dispatch.md): the pageable copy here takes 0.5 / 9.2 / 37 ms at
# n = 1024 / 4096 / 8192 where CuPy's pinned upload took 0.7 / 4.1 / 10 ms.
HOST_MAX_BYTES = 256 << 20  # n = 8192 int32: above, the pinned upload saves more than CuPy's start-up costs
SMALL_BYTES = 16 << 20  # n = 2048 int32: below, the two copies cost about the same


def usable(problem) -> bool:
    """This path serves ``problem`` by default: a host matrix that is its own work matrix
    (square int32, minimised: no preparation pass, which the CuPy path runs on the device),
    and either CuPy not imported yet in this process (its import
    and set-up would cost more than any copy saves: a one-shot solve) or a matrix small enough
    (SMALL_BYTES) that the pageable copy costs no more than CuPy's ring. A test may send any
    host input through it (``launch``): its work matrix is then prepared on the host."""
    if problem.xp is not np or not work_is_the_input(problem) or problem.original.nbytes > HOST_MAX_BYTES:
        return False
    return "cupy" not in sys.modules or problem.original.nbytes <= SMALL_BYTES


@dataclass
class HostSolve:
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
           blocks_per_sm: int = BLOCKS_PER_SM, auction_rounds: int = AUCTION_ROUNDS) -> HostSolve:
    """Solve a host work matrix (lapcli.work.WorkMatrix): copy in, one cooperative launch, the
    certificate's read pass on the device, the assignment and duals back. ``device`` None: CuPy's
    current device where CuPy is loaded, else device 0. The thread's current context is restored
    after, so that CuPy's current device does not change under its caller."""
    if device is None:
        device = sys.modules["cupy"].cuda.runtime.getDevice() if "cupy" in sys.modules else 0
    gpu = open_gpu(device)
    previous = _check(_driver().cuCtxGetCurrent())
    gpu.make_current()
    try:
        return _launch(gpu, work, timeout, block_size, blocks_per_sm, auction_rounds)
    finally:
        if int(previous):
            _check(_driver().cuCtxSetCurrent(previous))


def _launch(gpu, work, timeout, block_size, blocks_per_sm, auction_rounds) -> HostSolve:
    host = np.ascontiguousarray(work.values)
    size, dtype = host.shape[0], work.dtype
    kernels, compile_ms = load(program(dtype, block_size=block_size), gpu)
    plan = plan_launch(gpu, kernels["hungarian"], size, host.itemsize, block_size, blocks_per_sm)
    check_device_memory(plan.bytes_needed, gpu.free_bytes())
    events = [Event() for _ in range(4)]
    state = DeviceState(None, size, plan, dtype, work.eps, timeout, auction_rounds=auction_rounds,
                        cost_bytes=host.nbytes, row_min_slack=True)
    try:
        events[0].record()
        state.arena.upload("cost", host)
        events[1].record()
        start_solve(kernels["hungarian"], plan, state)
        events[2].record()
        read = state.to_host("status", "step_ns", "step_count", "column_of_star_at_row", "u", "v")
        events[3].record()
        events[3].synchronize()
        details = launch_details(plan, compile_ms, launches=2, h2d_ms=events[1].ms_since(events[0]),
                                 kernel_ms=events[2].ms_since(events[1]), d2h_ms=events[3].ms_since(events[2]))
        details["route"] = "host"
        details["auction_rounds"] = int(read["step_count"][0])
        details["driver_started_early"] = early_start.started_early()
        columns = read["column_of_star_at_row"]
        check_result(int(read["status"][0]), columns)
        start_row_min_slack(kernels["row_min_slack"], gpu, state, block_size)
        row_minima = state.to_host("row_min_slack")["row_min_slack"]
    finally:
        state.arena.free()
    return HostSolve(columns, read["u"], read["v"], read["step_count"], read["step_ns"], row_minima, details,
                     gpu.name)
