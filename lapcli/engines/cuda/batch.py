"""Engine ``cuda-batch``: every problem of a stack in ONE launch of kernels/batch_lap.cu (shortest
augmenting paths, one thread group per problem), which also proves each answer optimal, sums its
objective and writes the caller's columns; one copy back is the call's one synchronisation.
"""

from __future__ import annotations

import numpy as np

from ...cuda.batch_lap import certified_launch, certified_stack
from ...cuda.runtime import current_stream, reused_events
from ...cuda.staging import start_upload, upload
from ... import ragged
from ...work import Work
from ..base import PendingBatch
from .batch_collect import collect
from .batch_members import run_members  # noqa: F401  (the engine's entry for a ragged batch)


def run_batch(problem, *, timeout: float | None = None, device: int | None = None):
    """ONE launch that solves every problem of the work stack, certifies every answer, sums the
    objectives and writes the caller's columns into one buffer; one copy back (the 48-byte summary
    and the objectives, plus the columns for host input) is the call's one synchronisation.
    Per-problem statistics are copied only when some problem was not proved (to name it) or has
    forbidden entries (its own tolerance).

    The common call, a C-contiguous int32 or float32 stack of n ≤ m problems to minimise, is its
    own work stack: a device stack is launched at once; a host stack is launched as soon as its
    upload's DMAs are issued, the launch prepared while lapcli.cuda.staging copies its pieces
    (a 10000 × 16 stack solves in ~0.1 ms on an H100: the call around it is the cost). Other stacks
    are uploaded, then their work stack is built on the device (lapcli.work).

    Entries nobody has checked are solved as if finite (every loop of the kernel is bounded); when
    the launch meets NaN or an infinity the result says so (``unchecked_nonfinite``) and the
    pipeline checks them and runs the engine again."""
    import cupy

    current = cupy.cuda.runtime.getDevice()
    if device is not None and device != current:
        with cupy.cuda.Device(device):
            return run_batch(problem, timeout=timeout)
    on_host = problem.xp is np
    stack = problem.stack
    batch, n, m = problem.shape
    entries_checked = problem.forbidden is not None
    if not on_host and problem.transposed and _plain(problem, on_host, current):
        # tall problems read through their transpose by the ragged launch: no transposed copy
        # NaN or an infinity: the result says so, and the pipeline checks the entries and runs again
        result = run_members(ragged.from_stack(stack, problem.origin), maximize=False, timeout=timeout)
        if result is not None:
            return result
    if is_own_work(problem, on_host, current):
        if not on_host:  # launched at once; the pipeline's bookkeeping runs while the kernel does
            run = certified_stack(stack, n_out=n, transposed=False, timeout=timeout)
            col_ind = run.col_ind
            return PendingBatch(col_ind, lambda: collect(run, Work(stack), on_host=False, entries_checked=entries_checked,
                                                         started=None, device_col_ind=col_ind))
        stream = current_stream()
        start, copied_in = reused_events(current, "batch", 2)
        start.record(stream)  # the device time from here to the launch's end: upload and solve
        pending = start_upload(stack)
        try:
            launch = certified_launch(pending.out, n_out=n, transposed=False, timeout=timeout)
        finally:
            values = pending.wait()
        copied_in.record(stream)
        return collect(launch(), Work(values), on_host=True, entries_checked=entries_checked,
                       started=(start, copied_in))
    stream = current_stream()
    start, copied_in = reused_events(current, "batch", 2)
    start.record(stream)  # the device time from here to the launch's end: upload, work stack, solve
    source = upload(stack) if on_host else stack
    if on_host:
        copied_in.record(stream)
    work = problem.work_stack(cupy, source, unchecked=True)
    exact_offsets = work.exact and work.row_offset is not None  # summed by the pipeline, exactly
    run = certified_stack(work.values, n_out=n, transposed=problem.transposed,
                          row_offset=None if exact_offsets else work.row_offset, timeout=timeout)
    result = collect(run, work, on_host=on_host, entries_checked=problem.forbidden is not None,
                     started=(start, copied_in if on_host else None))
    if exact_offsets or (not work.exact and problem.stack.dtype.kind in "biu"):
        result.objectives = None  # the pipeline sums the caller's costs: integers stay exact integers
    return result


def is_own_work(problem, on_host: bool, device: int) -> bool:
    """A C-contiguous int32 or float32 stack of n ≤ m problems to minimise in its own dtype, with no
    forbidden entry known, on the host or on the current device: its own work stack."""
    return problem.n_rows <= problem.n_cols and _plain(problem, on_host, device)


def _plain(problem, on_host: bool, device: int) -> bool:
    """A C-contiguous int32 or float32 stack to minimise in its own dtype, with no forbidden entry
    known, on the host or on the current device: what the kernel reads as it is."""
    stack = problem.stack
    dtype = stack.dtype
    return (dtype in _PLAIN_DTYPES and not problem.maximize
            and (problem.requested_dtype is None or problem.requested_dtype == dtype.name)
            and stack.flags.c_contiguous
            and (problem.forbidden is None or not problem.forbidden.any())
            and (on_host or stack.data.device_id == device))


_PLAIN_DTYPES = (np.dtype(np.int32), np.dtype(np.float32))
