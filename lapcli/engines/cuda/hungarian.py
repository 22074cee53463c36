"""Engine ``cuda``: the classical Hungarian algorithm, steps 1-6 in ONE cooperative launch of
kernels/hungarian.cu (Lopes et al. 2019, with the optimizations Kawtikwar et al. measured, and an
auction start: Jonker-Volgenant's augmenting row reduction in parallel rounds).

Build the work matrix on the device (a host input is uploaded through lapcli.cuda.staging), launch,
prove the answer with its duals on the device (lapcli.certificate), copy back the assignment, the
duals, the per-step clocks and a status. A host matrix that is its own work matrix goes through the
driver API where that is cheaper (lapcli.cuda.hungarian_driver.usable: a cold ``lap solve``).
"""

from __future__ import annotations

import numpy as np

from ...cuda import hungarian_driver
from ...cuda.hungarian import (
    DeviceState,
    allow_shared_memory,
    check_memory_before_upload,
    device_work,
    launch_details,
    prepare_launch,
    step_stats,
)
from ...cuda.hungarian_abi import BLOCK_SIZE, BLOCKS_PER_SM, kernel_name
from ...steps import AUCTION_ROUNDS
from ..base import EngineResult, certified_result
from .common import finish


def run(problem, *, timeout: float | None = None, device: int | None = None) -> EngineResult:
    """One cooperative launch, through the driver API for the host inputs it serves, else CuPy."""
    if hungarian_driver.usable(problem):
        return run_with_driver(problem, timeout=timeout, device=device)
    return run_with_cupy(problem, timeout=timeout, device=device)


def run_with_driver(problem, *, timeout: float | None = None, device: int | None = None,
                    auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """A host input: its work matrix built on the host, solved and certified by the driver launch."""
    problem.check_entries_on(problem.original, np)  # NaN / infinities: the host holds the matrix
    work = problem.work_on(np)
    solved = hungarian_driver.launch(work, timeout=timeout, device=device, auction_rounds=auction_rounds)
    return certified_result(problem, work, solved.columns, solved.u, solved.v, engine="cuda", device=solved.device,
                            steps=step_stats(solved.counts, solved.clocks_ns / 1e6), details=solved.details,
                            row_min_slack=solved.row_min_slack)


def run_with_cupy(problem, *, timeout: float | None = None, device: int | None = None,
                  auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """The CuPy launch: device inputs stay where they are, host inputs go through lapcli.cuda.staging.
    ``auction_rounds`` = 0 runs the classical step 1 (the GPU tests compare its steps with the twin's)."""
    import cupy

    with cupy.cuda.Device(device if device is not None else cupy.cuda.Device().id):
        start, copied_in, launched, solved, copied_out = (cupy.cuda.Event() for _ in range(5))
        check_memory_before_upload(problem, BLOCKS_PER_SM)
        start.record()
        work = device_work(problem)  # no copy when the input already lives on the device
        copied_in.record()
        module, dtype, plan, compile_ms = prepare_launch(problem, work, False, BLOCK_SIZE, BLOCKS_PER_SM)
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
