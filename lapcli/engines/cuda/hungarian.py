"""Engine ``cuda``: the classical Hungarian algorithm, steps 1-6 in ONE cooperative launch of
kernels/hungarian.cu (Lopes et al. 2019, with the optimizations Kawtikwar et al. measured, and an
auction start: Jonker-Volgenant's augmenting row reduction in parallel rounds).

Build the work matrix on the device (a host input is uploaded through lapcli.cuda.staging), launch,
prove the answer with its duals on the device (lapcli.certificate), copy back the assignment, the
duals, the per-step clocks and a status. A host matrix that is its own work matrix is copied in by
the driver without CuPy where that is cheaper (lapcli.cuda.hungarian_host.usable: a cold
``lap solve``); the launch is the same.
"""

from __future__ import annotations

import numpy as np

from ...cuda import hungarian_host
from ...cuda.hungarian import (
    DeviceState,
    check_memory_before_upload,
    device_work,
    launch_details,
    prepare_launch,
    start_solve,
    step_stats,
)
from ...cuda.hungarian_abi import BLOCK_SIZE, BLOCKS_PER_SM
from ...cuda.runtime import current_gpu, current_stream, reused_events
from ...steps import AUCTION_ROUNDS
from ..base import EngineResult, certified_result
from .common import finish


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    """One cooperative launch; a host input the driver copies in without CuPy where that is cheaper."""
    if hungarian_host.usable(problem):
        return run_from_host(problem, timeout=timeout, device=device)
    return run_on_cupy(problem, timeout=timeout, device=device)


def run_from_host(problem, *, timeout: float | None = None, device: int | None = None,
                  auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """A host input: its work matrix built on the host, copied in by the driver, solved and certified."""
    problem.check_entries_on(problem.original, np)  # NaN / infinities: the host holds the matrix
    work = problem.work_on(np)
    solved = hungarian_host.launch(work, timeout=timeout, device=device, auction_rounds=auction_rounds)
    return certified_result(problem, work, solved.columns, solved.u, solved.v, engine="cuda", device=solved.device,
                            steps=step_stats(solved.counts, solved.clocks_ns / 1e6), details=solved.details,
                            row_min_slack=solved.row_min_slack)


def run_on_cupy(problem, *, timeout: float | None = None, device: int | None = None,
                auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """The work matrix a CuPy array: device inputs stay where they are, host inputs go through
    lapcli.cuda.staging. ``auction_rounds`` = 0 runs the classical step 1 (the GPU tests compare
    its steps with the twin's)."""
    import cupy

    with cupy.cuda.Device(device if device is not None else cupy.cuda.runtime.getDevice()):
        stream = current_stream()
        start, copied_in, launched, solved, copied_out = reused_events(current_gpu().ordinal, "classical", 5)
        check_memory_before_upload(problem, BLOCKS_PER_SM)
        start.record(stream)
        work = device_work(problem)  # no copy when the input already lives on the device
        copied_in.record(stream)
        kernels, dtype, plan, compile_ms = prepare_launch(problem, work, False, BLOCK_SIZE, BLOCKS_PER_SM)
        state = DeviceState(work.values, problem.size, plan, dtype, work.eps, timeout, auction_rounds=auction_rounds,
                            stream=stream)
        launched.record(stream)
        start_solve(kernels["hungarian"], plan, state)
        solved.record(stream)
        counters = state.to_host("step_ns", "step_count", "status")
        clocks_ns, counts, status_word = counters["step_ns"], counters["step_count"], int(counters["status"][0])
        copied_out.record(stream)
        copied_out.synchronize()
        details = launch_details(plan, compile_ms, launches=1, h2d_ms=copied_in.ms_since(start),
                                 kernel_ms=solved.ms_since(launched), d2h_ms=copied_out.ms_since(solved))
        details["route"] = "cupy"
        details["auction_rounds"] = int(counts[0])
        return finish(problem, work, state, status_word, counts, clocks_ns / 1e6, "cuda", details)
