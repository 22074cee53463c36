"""Engine ``cuda-stepwise``: the same device code as ``cuda``, one kernel per step, driven by a
host loop that reads the flags back after steps 2, 3 and 4, as LAP19 and HyLAC run; each step is
timed with CUDA events. It is the baseline that shows what the single cooperative launch buys.
"""

from __future__ import annotations

import math
import threading
import time

from ...cuda.hungarian import (
    DeviceState,
    check_memory_before_upload,
    device_work,
    launch_details,
    prepare_launch,
)
from ...cuda.hungarian_abi import (
    BLOCK_SIZE,
    BLOCKS_PER_SM,
    EPOCH_KERNELS,
    SHARED_KERNELS,
    SLOT_CHANGED,
    SLOT_COUNT,
    SLOT_INTS,
    SLOT_PATH,
    SLOT_STARS,
)
from ...cuda.runtime import Event, current_gpu, current_stream
from ...steps import AUCTION_PATIENCE, AUCTION_ROUNDS
from ..base import EngineResult
from .common import finish


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    """One launch per step from a host loop, steps timed with CUDA events."""
    return solve(problem, timeout=timeout, device=device)


def solve(problem, *, timeout: float | None = None, device: int | None = None,
          auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """``run`` with the auction's round cap (0: the classical step 1, as the twin's)."""
    import cupy

    with cupy.cuda.Device(device if device is not None else cupy.cuda.runtime.getDevice()):
        return _run_stepwise(problem, timeout, BLOCK_SIZE, BLOCKS_PER_SM, auction_rounds)


_pools = threading.local()


def _event_pool() -> list:
    """This thread's timing events on the current device, grown to the most a solve has used; a
    solve reads its times before the next one records into them."""
    pools = _pools.__dict__.setdefault("by_device", {})
    return pools.setdefault(current_gpu().ordinal, [])


def _run_stepwise(problem, timeout, block_size, blocks_per_sm, auction_rounds) -> EngineResult:
    check_memory_before_upload(problem, blocks_per_sm)  # (current_gpu: the device's context made current)
    stream = current_stream()
    start, copied_in = Event(), Event()
    start.record(stream)
    work = device_work(problem)
    copied_in.record(stream)
    kernels, dtype, plan, compile_ms = prepare_launch(problem, work, True, block_size, blocks_per_sm)
    for name in SHARED_KERNELS[1:]:
        kernels[name].allow_shared(plan.shared_bytes)
    state = DeviceState(work.values, problem.size, plan, dtype, work.eps, None, auction_rounds=auction_rounds,
                        stream=stream)
    timed: list[tuple[int, object, object]] = []  # (step, start event, end event)
    pool = _event_pool()
    counts = [0] * 7
    launches = 0
    deadline = time.perf_counter() + timeout if timeout else math.inf

    def launch_step(step: int, names: tuple[str, ...], epoch: int | None = None, count: bool = True):
        nonlocal launches
        at = 2 * len(timed)
        while len(pool) < at + 2:  # events reused solve after solve: making and destroying two a step
            pool.append(Event())   # cost ~10 µs of a 20-25 µs step (H100)
        begin, end = pool[at], pool[at + 1]
        begin.record(stream)
        for name in names:
            shared = plan.shared_bytes if name in SHARED_KERNELS else 0
            kernels[name].launch(plan.blocks, plan.block_size,
                                 (state.address, epoch) if name in EPOCH_KERNELS else (state.address,),
                                 shared=shared, stream=stream)
            launches += 1
        end.record(stream)
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
    finished = Event()
    finished.record(stream)
    finished.synchronize()
    step_ms = [0.0] * 7
    for step, begin, end in timed:
        step_ms[step] += end.ms_since(begin)
    details = launch_details(
        plan, compile_ms, launches=launches,
        h2d_ms=copied_in.ms_since(start),
        kernel_ms=finished.ms_since(copied_in),  # all launches, host loop included
    )
    details["auction_rounds"] = rounds_run
    return finish(problem, work, state, status_word, counts, step_ms, "cuda-stepwise", details)
