"""Engine ``cuda-batch`` on a ragged batch (lapcli.ragged.Members): ONE certified launch of
kernels/batch_lap.cu reads every member where it lies, through the members' table
(kernels/ragged_table.cuh; a tall member through its transpose), solves and proves each at its own
size, and writes the caller's columns and, for lapcli.match, DETR's pairs. One copy back (the
48-byte summary and the objectives) is the call's one synchronisation.

Why in place: a padded work stack (lapcli.ragged.pack) makes every member as large as the largest
(dummy rows to search, forbidden columns), needs a pack launch and the pipeline's pass over the
forbidden entries, and then an unpack and a pairs launch; in place, a member costs its own
searches and nothing is written before the solve (docs/design.md, "Ragged batches"; the H100 times
are in docs/benchmarks.md).

It declines (returns None, and the pipeline packs the members) what the in-place read does not
cover: maximised members, costs whose work dtype is not float32 or int32 (float64 work is reduced
by rows first, and wide integers need int64), a requested dtype other than theirs, members wider
than the kernel's columns, and members on another GPU than the one asked for or current. After the
launch, members holding NaN or an infinity give a result that says so (``unchecked_nonfinite``):
the pack path, or for a stack the pipeline's entry check, takes them (bad input, or forbidden
pairs).
"""

from __future__ import annotations

import numpy as np

from ...cuda import ragged_pack
from ...cuda.batch_lap import MAX_COLUMNS, certified_members
from ...work import Work
from .batch_collect import collect

IN_PLACE_DTYPES = ("float32", "int32")


def run_members(members, *, maximize: bool, objectives: bool = True, pairs: bool = False, flat: bool = False,
                timeout: float | None = None, dtype: str | None = None, device: int | None = None):
    """The members' BatchEngineResult (``col_ind`` (B, most rows), −1 where a row has no column,
    on the members' device; ``pairs`` the (2, Σ) device array of rows and columns when asked; ``flat`` each
    member's columns after the previous member's when asked, one array to split into a list), or
    None where the in-place launch does not apply (see the module's docstring).
    ``objectives=False``: the kernel sums them anyway; they are dropped."""
    from ...ragged import flattened, work_dtype

    if maximize or not len(members):
        return None
    work = work_dtype(np.dtype(members.dtype))
    if work.name not in IN_PLACE_DTYPES or (dtype is not None and dtype != work.name):
        return None
    rows, cols = members.rows, members.cols
    real = np.minimum(rows, cols)
    r_max, c_max = max(int(real.max()), 1), max(int(np.maximum(rows, cols).max()), 1)
    if c_max > MAX_COLUMNS:
        return None
    import cupy

    current = cupy.cuda.runtime.getDevice()
    on_host = members.xp is np
    if (device is not None and device != current) or (not on_host and _device_of(members) != current):
        return None
    if on_host:  # one upload of the members one after the other
        members = flattened(members)
        values = cupy.asarray(np.ascontiguousarray(members.flat, dtype=work))
    else:
        values = members.flat.astype(work, copy=False) if members.flat is not None else None
    table, keep = ragged_pack.device_table(members, members.device_addresses(values))
    try:
        pair_arrays = cupy.empty((2, int(real.sum())), dtype=np.int64) if pairs else None
        flat_columns = cupy.empty(int(rows.sum()), dtype=np.int64) if flat and not on_host else None
        run = certified_members(table, len(members), r_max, c_max, work.name, n_out=int(rows.max()),
                                pairs=pair_arrays, flat=flat_columns, timeout=timeout)
        result = collect(run, Work(None), on_host=on_host, entries_checked=False, started=None)
    except BaseException:  # the table's copy may still read the pinned block: wait before it goes
        cupy.cuda.get_current_stream().synchronize()
        raise
    del keep, values  # the table's pinned source and the members' work copy: the launch has ended
    if result.unchecked_nonfinite:
        return result
    if not objectives:
        result.objectives = None
    result.pairs, result.flat = pair_arrays, flat_columns
    result.details["members"] = "read in place"
    return result


def _device_of(members) -> int:
    """The GPU that device members lie on (their flat array's, or the list's first matrix's)."""
    first = members.flat if members.flat is not None else members.arrays[0]
    if hasattr(first, "data") and hasattr(first.data, "device_id"):
        return first.data.device_id
    return first.device.index  # a torch CUDA tensor
