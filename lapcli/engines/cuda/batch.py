"""Engine ``cuda-batch``: every problem of a stack in ONE launch of kernels/batch_lap.cu (shortest
augmenting paths, one thread group per problem), which also proves each answer optimal, sums its
objective and writes the caller's columns; one copy back is the call's one synchronisation.
"""

from __future__ import annotations

import numpy as np

from ...cuda.batch_lap import (
    STATUS_MESSAGES,
    SUMMARY_SLOTS,
    CertifiedStack,
    certified_launch,
    certified_stack,
    copy_back,
    decode_key,
    device_label,
    dtype_name,
)
from ...cuda.runtime import current_stream, reused_events
from ...cuda.staging import start_upload, upload
from ...work import Work
from ..base import PendingBatch


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
    if exact_offsets:
        result.objectives = None
    return result


def is_own_work(problem, on_host: bool, device: int) -> bool:
    """A C-contiguous int32 or float32 stack of n ≤ m problems to minimise in its own dtype, with no
    forbidden entry known, on the host or on the current device: its own work stack."""
    stack = problem.stack
    dtype = stack.dtype
    return (dtype in _PLAIN_DTYPES and not problem.maximize
            and (problem.requested_dtype is None or problem.requested_dtype == dtype.name)
            and problem.n_rows <= problem.n_cols and stack.flags.c_contiguous
            and (problem.forbidden is None or not problem.forbidden.any())
            and (on_host or stack.data.device_id == device))


_PLAIN_DTYPES = (np.dtype(np.int32), np.dtype(np.float32))


def collect(run: CertifiedStack, work, *, on_host: bool, entries_checked: bool, started, device_col_ind=None):
    """Wait for a certified launch and read its answer: ONE copy back (the 48-byte summary and the
    objectives, plus the columns for host input) is the call's one synchronisation; per-problem
    statistics are copied only when some problem was not proved (to name it) or has forbidden
    entries (own tolerance). ``started`` = (start, copied_in) events of a call that uploaded or
    built its work stack on the device (None: the launch was the call's first device work);
    ``device_col_ind`` the view of ``run.col_ind`` a device caller made already (one less view).
    A launch that met NaN or an infinity in unchecked entries gives a result that says so
    (``unchecked_nonfinite``) and nothing else."""
    from ...errors import SolverError
    from ..base import BatchEngineResult

    values = work.values
    batch, r, c = values.shape
    n_out = run.n_out
    exact = values.dtype.kind in "iu"
    # summary | objectives | columns are adjacent: one copy (columns only for host input)
    head = SUMMARY_SLOTS + batch
    host = copy_back(run.buffer, head + (batch * n_out if on_host else 0))  # the one synchronisation
    summary = host[:SUMMARY_SLOTS].view(np.uint64).tolist()
    failed, nonfinite = summary[1], summary[2]
    if not entries_checked and nonfinite:
        return BatchEngineResult(col_ind=None, device=device_label(run.device), dtype=dtype_name(values.dtype),
                                 unchecked_nonfinite=True)
    min_slack = decode_key(~summary[3] & 0xFFFF_FFFF_FFFF_FFFF)
    max_assigned, tolerance = decode_key(summary[4]), decode_key(summary[5])
    if failed or work.scale is not None:
        stats = run.stats.get()
        if work.scale is not None:  # forbidden entries: the tolerance follows the finite costs
            _recheck_with_scale(stats, work.scale, c)
            min_slack, max_assigned, tolerance = float(stats[1].min()), float(stats[2].max()), float(stats[3].max())
        if (stats[4] != 1).any():
            failed_at = np.flatnonzero(stats[4] != 1)
            code = int(run.status[int(failed_at[0])].get())
            why = STATUS_MESSAGES.get(code, "") if code else "their optimality certificate failed"
            raise SolverError(f"the cuda-batch engine failed on problems {', '.join(map(str, failed_at[:20]))} "
                              f"of {batch}: {why} (a bug, please report it)")
    objectives = None  # reduced rows: the offsets' sum rounds; the caller sums the original costs (fsum)
    if exact:
        objectives = host[SUMMARY_SLOTS:head]
    elif work.row_offset is None:  # float32 costs, unreduced: their float64 sum is exact here
        objectives = host[SUMMARY_SLOTS:head].view(np.float64)
    if objectives is not None and work.sign < 0:
        objectives = -objectives
    if on_host:
        col_ind = host[head:].reshape(batch, n_out)
    else:
        col_ind = run.col_ind if device_col_ind is None else device_col_ind
    certificate = {
        "checked": "u_i + v_j <= c_ij everywhere, equality on the assignment, v = 0 on free columns, per problem",
        "min_slack": min_slack,
        "max_assigned_slack": max_assigned,
        "tolerance": tolerance,
        "ms": None,  # no time of its own: each group checks its problem inside the solve launch (kernel_ms)
        "where": "device",
        "fused": "in the solve launch",
        "problems": batch,
    }
    begin, end = run.events
    details = run.details
    details["kernel_ms"] = kernel_ms = round(end.ms_since(begin), 4)
    if started is None:
        details["h2d_ms"], details["total_device_ms"] = 0.0, kernel_ms
    else:
        start, copied_in = started
        details["h2d_ms"] = round(copied_in.ms_since(start), 4) if copied_in is not None else 0.0
        details["total_device_ms"] = round(end.ms_since(start), 4)
    return BatchEngineResult(col_ind=col_ind, device=device_label(run.device), dtype=dtype_name(values.dtype),
                             details=details, certificate=certificate, notes=work.notes, objectives=objectives)


def _recheck_with_scale(stats, scale, c):
    """Problems with forbidden entries: their max |cost| includes the sentinel, so the kernel's
    tolerance was looser than eps of the finite costs; recheck min slack against that eps."""
    tol = c * scale * 2.0**-50
    stats[3] = tol
    stats[4] *= (stats[1] >= -tol)
