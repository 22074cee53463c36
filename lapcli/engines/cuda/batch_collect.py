"""The end of every certified launch of kernels/batch_lap.cu (engine ``cuda-batch``, a stack or a
ragged batch): wait for it with one copy back, read whether every problem was proved, and build
the engine's result (objectives, the caller's columns, the certificate's summary)."""

from __future__ import annotations

import numpy as np

from ...cuda.batch_lap import STATUS_MESSAGES, SUMMARY_SLOTS, CertifiedStack, copy_back, decode_key, device_label


def collect(run: CertifiedStack, work, *, on_host: bool, entries_checked: bool, started, device_col_ind=None):
    """Wait for a certified launch and read its answer: ONE copy back (the 48-byte summary and the
    objectives, plus the columns for host input) is the call's one synchronisation; per-problem
    statistics are copied only when some problem was not proved (to name it) or has forbidden
    entries (own tolerance). ``started`` = (start, copied_in) events of a call that uploaded or
    built its work stack on the device (None: the launch was the call's first device work);
    ``device_col_ind`` the view of ``run.col_ind`` a device caller made already (one less view).
    A launch that met NaN or an infinity in unchecked entries gives a result that says so
    (``unchecked_nonfinite``) and nothing else."""
    from ...certificate import MINIMISED, proved_within
    from ...errors import SolverError
    from ..base import BatchEngineResult

    batch, c, n_out = run.batch, run.columns, run.n_out
    exact = run.dtype.startswith("int")
    # summary | objectives | columns are adjacent: one copy (columns only for host input)
    head = SUMMARY_SLOTS + batch
    host = copy_back(run.buffer, head + (batch * n_out if on_host else 0))  # the one synchronisation
    summary = host[:SUMMARY_SLOTS].view(np.uint64).tolist()
    failed, nonfinite = summary[1], summary[2]
    if not entries_checked and nonfinite:
        return BatchEngineResult(col_ind=None, device=device_label(run.device), dtype=run.dtype,
                                 unchecked_nonfinite=True)
    # a slot no problem wrote is 0 (a batch of empty members: nothing to prove, nothing to report)
    min_slack = decode_key(~summary[3] & 0xFFFF_FFFF_FFFF_FFFF) if summary[3] else 0.0
    max_assigned, tolerance = (decode_key(key) if key else 0.0 for key in summary[4:6])
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
    elif work.row_offset is None:  # float32 costs, unreduced: the kernel's float64 sum, exact where the picked
        # |c| span n·max <= 2^29·min (lapcli.sums), else within n roundings (docs/reliability.md, Determinism)
        objectives = host[SUMMARY_SLOTS:head].view(np.float64)
    if objectives is not None and work.sign < 0:
        objectives = -objectives
    if on_host:
        col_ind = host[head:].reshape(batch, n_out)
    else:
        col_ind = run.col_ind if device_col_ind is None else device_col_ind
    certificate = {
        "checked": f"u_i + v_j <= c_ij everywhere, equality on the assignment, v = 0 on free columns, per problem, "
                   f"{MINIMISED}",
        "min_slack": min_slack,
        "max_assigned_slack": max_assigned,
        "tolerance": tolerance,
        # rows reduced, not columns; c: the widest member's columns (a ragged batch's work has no values:
        # its members are read where they lie). The check's own rounding (certificate.check_rounding,
        # 2^-52 (|u| + |v| + tol)) with duals within k·max|c| each, the kernel's: at most tol / 2 more
        "objective_within": proved_within(tolerance * (1.5 + 2.0**-52), c, c),
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
    return BatchEngineResult(col_ind=col_ind, device=device_label(run.device), dtype=run.dtype,
                             details=details, certificate=certificate, notes=work.notes, objectives=objectives)


def _recheck_with_scale(stats, scale, c):
    """Problems with forbidden entries: their max |cost| includes the sentinel, so the kernel's
    tolerance was looser than eps of the finite costs; recheck the min slack and the assigned
    pairs' against that eps (the columns' own checks hold at any tolerance: a column no row took
    keeps v = 0 exactly, kernels/batch_lap.cu)."""
    tol = c * (scale * 2.0**-50)  # scaled first: c · scale overflows for costs near 1.8e308
    stats[3] = tol
    stats[4] *= (stats[1] >= -tol) & (stats[2] <= tol)
