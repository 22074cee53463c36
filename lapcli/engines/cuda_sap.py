"""Engine ``cuda-sap``: the auction start of the ``cuda`` kernel, then shortest augmenting paths
(Jonker–Volgenant) from the rows it leaves free, in one thread block.

Why: the classical phases pay a grid-wide dual update (step 6) per new zero, and on squared
distances and the widest integer ranges they still need thousands of them after the auction
(issue #14). A shortest-path search needs no grid barrier at all: each of its steps is one row
read and one block-wide argmin (~1 µs), and after the auction only ~1–6 % of the rows are free.
Its cost does not depend on the range; the classical kernel stays faster where zeros are many
(low ranges), and ``auto`` chooses between them by measurement (engines/auto.py).

Two launches on one stream, nothing copied between them:
  1. kernels/hungarian.cu with ``start_only``: the auction (its rounds as the twin's
     numpy_hungarian.auction_start), leaving v and a partial assignment whose every row is tight
     at a minimum of c − v over its row;
  2. kernels/batch_lap.cu on the one problem with that warm start (cuda_batch.solve_stack): a
     Dijkstra per free row, the dual update, the augmentation; u = c − v on the assignment.
The twin (:func:`twin`) composes the two NumPy specifications; the certificate proves every answer.
"""

from __future__ import annotations

import numpy as np

from ..errors import LapInputError, SolverError
from .base import EngineResult, certified_result
from .cuda_batch import MAX_COLUMNS, STATUS_MESSAGES, reference_stack, solve_stack
from .numpy_hungarian import AUCTION_PATIENCE, AUCTION_ROUNDS, auction_start
from .steps import StepStat

STEPS = (
    (1, "start: auction"),  # rounds run
    (2, "shortest augmenting paths"),  # searches (the rows the auction left free)
)


def twin(cost: np.ndarray, rounds: int = AUCTION_ROUNDS, patience: int = AUCTION_PATIENCE):
    """The engine's specification in NumPy: (column of each row, u, v, rounds, searches).
    Integer costs give the kernel's answer exactly (same bids, ties and stopping rule; same
    search order and tie-break)."""
    cost = np.asarray(cost)
    dual = np.int64 if cost.dtype.kind in "iu" else np.float64
    _, v, column_of_row, _, done = auction_start(cost.astype(dual), rounds=rounds, patience=patience)
    searches = int((column_of_row < 0).sum())
    columns, u, v, _ = reference_stack(cost[None], warm_start=(v[None], column_of_row[None].astype(np.int32)))
    return columns[0], u[0], v[0], done, searches


def run(problem, *, timeout: float | None = None, device: int | None = None,
        auction_rounds: int = AUCTION_ROUNDS, auction_patience: int = AUCTION_PATIENCE,
        layout: tuple[int, int] | None = None, **_options) -> EngineResult:
    """Solve one square (padded) problem of at most MAX_COLUMNS columns; device inputs stay where
    they are, host inputs go through lapcli.staging, as for engine ``cuda``. ``auction_rounds``
    (0: no auction, a search from every row), ``auction_patience`` and the search's ``layout`` (K, THREADS) exist for
    measurements."""
    import cupy

    from .cuda_hungarian import (BLOCK_SIZE, BLOCKS_PER_SM, DeviceState, allow_shared_memory,
                                 check_memory_before_upload, check_result, device_name, device_work,
                                 kernel_name, launch_details, prepare_launch)

    if problem.size > MAX_COLUMNS:
        raise LapInputError(f"solver 'cuda-sap' takes at most {MAX_COLUMNS} columns, not {problem.size} "
                            "(use 'cuda' or 'auto')")
    with cupy.cuda.Device(device if device is not None else cupy.cuda.Device().id):
        start, copied_in, auctioned, searched, copied_out = (cupy.cuda.Event() for _ in range(5))
        check_memory_before_upload(problem, BLOCKS_PER_SM)
        start.record()
        work = device_work(problem)
        copied_in.record()
        module, dtype, plan, compile_ms = prepare_launch(problem, work, False, BLOCK_SIZE, BLOCKS_PER_SM)
        kernel = module.get_function(kernel_name("hungarian", dtype))
        allow_shared_memory(kernel, plan)
        state = DeviceState(work.values, plan, dtype, work.eps, timeout, auction_rounds, start_only=True,
                            auction_patience=auction_patience)
        kernel((plan.blocks,), (plan.block_size,), (state.struct,), shared_mem=plan.shared_bytes)
        auctioned.record()
        size = problem.size
        start_columns = state["column_of_star_at_row"]
        free_rows = cupy.count_nonzero(start_columns < 0)  # read after the solve, no sync here
        result = solve_stack(work.values.reshape(1, size, size), work.eps, timeout=timeout, synchronize=False, layout=layout,
                             warm_start=(state["v"].reshape(1, size), start_columns.reshape(1, size)))
        searched.record()
        status_word = int(state["status"].get()[0])
        clocks_ns, counts = state["step_ns"].get(), state["step_count"].get()
        stack_status = int(result.status.get()[0])
        searches = int(free_rows.get())
        copied_out.record()
        copied_out.synchronize()
        if status_word != 0:
            from .cuda_hungarian import STATUS_MESSAGES as START_MESSAGES

            raise SolverError(START_MESSAGES.get(status_word, f"the auction kernel ended with status {status_word}"))
        if stack_status != 0:
            raise SolverError(STATUS_MESSAGES.get(stack_status, f"the search kernel ended with status {stack_status}"))
        check_result(0, result.col_of_row[0].get())  # a permutation (the certificate checks the duals)
        elapsed = cupy.cuda.get_elapsed_time
        auction_ms, search_ms = elapsed(copied_in, auctioned), elapsed(auctioned, searched)
        details = launch_details(plan, compile_ms + result.details["compile_ms"], launches=2,
                                 h2d_ms=elapsed(start, copied_in), kernel_ms=auction_ms + search_ms,
                                 d2h_ms=elapsed(searched, copied_out))
        details.update(launcher="cupy", auction_rounds=int(counts[0]), search_layout=result.details["layout"])
        steps = [StepStat(1, STEPS[0][1], int(counts[0]), float(clocks_ns[1]) / 1e6),
                 StepStat(2, STEPS[1][1], searches, search_ms)]
        return certified_result(problem, work, result.col_of_row[0], result.u[0], result.v[0], engine="cuda-sap",
                                device=device_name(), steps=steps, details=details)
