"""Engine ``cuda-batch``: every problem of a stack in ONE launch of kernels/batch_lap.cu (shortest
augmenting paths, one thread group per problem), which also proves each answer optimal, sums its
objective and writes the caller's columns; one copy back is the call's one synchronisation.
"""

from __future__ import annotations

import numpy as np

from ...cuda.batch_lap import (
    CertifiedStack, SUMMARY_SLOTS, STATUS_MESSAGES, certified_stack, copy_back, decode_key, device_label, dtype_name,
    reused_events,
)


def run_batch(problem, *, timeout: float | None = None, device: int | None = None):
    """Upload (lapcli.cuda.staging), build the work stack on the device (lapcli.batch.work_stack), then
    ONE launch that solves every problem, certifies every answer, sums the objectives and writes the
    caller's columns into one buffer; one copy back (the 48-byte summary and the objectives, plus the
    columns for host input) is the call's one synchronisation. Per-problem statistics are copied
    only when some problem was not proved (to name it) or has forbidden entries (own tolerance).

    A stack whose entries the caller did not check (``problem.entries_checked`` False) is solved
    as if finite; if the kernel met NaN or an infinity, EntriesNeedChecking asks the caller to check
    them and call again (the launch on such input is harmless: every loop is bounded)."""
    import cupy

    from ...batch import work_stack
    from ...cuda.staging import upload

    if device is not None and device != cupy.cuda.runtime.getDevice():
        with cupy.cuda.Device(device):
            return run_batch(problem, timeout=timeout)
    current = cupy.cuda.runtime.getDevice()
    on_host = problem.xp is np
    start, copied_in = reused_events(current, "batch", 2)
    start.record()  # the device time from here to the launch's end: upload, work stack, solve
    if on_host:
        source = upload(problem.original)
        copied_in.record()
    else:
        source = problem.original
    work = work_stack(problem, cupy, source=source)
    n_out = problem.shape[1]
    run = certified_stack(work.values, n_out=n_out, transposed=problem.transposed, row_offset=work.row_offset,
                          timeout=timeout)
    return collect(run, work, on_host=on_host, entries_checked=problem.entries_checked,
                   started=(start, copied_in if on_host else None))


def launch_plain_stack(values, *, timeout: float | None = None) -> CertifiedStack:
    """The certified launch of the common call, kept lean: ``values`` a C-contiguous int32 or
    float32 CuPy stack of n <= m problems to minimise, on the current device, is its own work stack
    (no upload, no copy, no transpose). Nothing waits: the caller does its bookkeeping while the
    kernel runs, then ``collect``s (its entries are unchecked: EntriesNeedChecking if the kernel
    met NaN or an infinity). Why a path of its own: a 10000 x 16 stack solves in ~0.1 ms on an
    H100, and the call is mostly the Python around it (H100 machine, synchronised wall time: this
    path 0.17-0.19 ms, the general path 0.19-0.23, the launch and one copy alone 0.15-0.16)."""
    return certified_stack(values, n_out=values.shape[1], transposed=False, timeout=timeout)


def collect(run: CertifiedStack, work, *, on_host: bool, entries_checked: bool, started, device_col_ind=None):
    """Wait for a certified launch and read its answer: ONE copy back (the 48-byte summary and the
    objectives, plus the columns for host input) is the call's one synchronisation; per-problem
    statistics are copied only when some problem was not proved (to name it) or has forbidden
    entries (own tolerance). ``started`` = (start, copied_in) events of a call that uploaded or
    built its work stack on the device (None: the launch was the call's first device work);
    ``device_col_ind`` the view of ``run.col_ind`` a device caller made already (one less view).
    Raises EntriesNeedChecking when the launch met NaN or an infinity in unchecked entries."""
    import cupy

    from ...errors import SolverError
    from ..base import BatchEngineResult, EntriesNeedChecking

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
        raise EntriesNeedChecking()
    min_slack = decode_key(~summary[3] & 0xFFFF_FFFF_FFFF_FFFF)
    max_assigned, tolerance = decode_key(summary[4]), decode_key(summary[5])
    if failed or work.scale is not None:
        stats = run.stats.get()
        if work.scale is not None:  # forbidden entries: the tolerance follows the finite costs
            _recheck_with_scale(stats, cupy.asnumpy(work.scale), c)
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
    elapsed = cupy.cuda.get_elapsed_time
    details["kernel_ms"] = kernel_ms = round(elapsed(begin, end), 4)
    if started is None:
        details["h2d_ms"], details["total_device_ms"] = 0.0, kernel_ms
    else:
        start, copied_in = started
        details["h2d_ms"] = round(elapsed(start, copied_in), 4) if copied_in is not None else 0.0
        details["total_device_ms"] = round(elapsed(start, end), 4)
    return BatchEngineResult(col_ind=col_ind, device=device_label(run.device), dtype=dtype_name(values.dtype),
                             details=details, certificate=certificate, notes=work.notes, objectives=objectives)


def _recheck_with_scale(stats, scale, c):
    """Problems with forbidden entries: their max |cost| includes the sentinel, so the kernel's
    tolerance was looser than eps of the finite costs; recheck min slack against that eps."""
    tol = c * scale * 2.0**-50
    stats[3] = tol
    stats[4] *= (stats[1] >= -tol)
