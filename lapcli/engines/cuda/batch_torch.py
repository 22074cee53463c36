"""Engine ``cuda-batch`` on ragged batches held by torch on the GPU, in the fewest host operations
that launch, prove and hand back their answer: DETR's matcher block (``lapcli.match``, the call of
every training step), a padded stack with sizes and a list of matrices
(``batch_linear_assignment``, which returns only the columns).

It is the engine's in-place launch (lapcli.engines.cuda.batch_members: the same kernel, the same
members' table, the same fused certificate), reached without the generic path's conversions: the
members' table is written straight from the tensors' addresses and the sizes into a reused
pinned block, uploaded together with the zeroed certificate summary in one copy; the
launch's one device buffer (table, summary, proof, pairs) is a torch allocation on torch's current
stream, where the launch is queued; one 48-byte copy back is the call's one synchronisation; the
per-image tensors are cut (``split``) while the kernel runs, before that synchronisation. At
32 × 300 × 50 on an H100 machine the generic path spent ~0.35 ms of host work per call (timers
around its functions: reading the block 61 µs, the table 40 µs, the launch 59 µs, the result
30 µs), about what HA4DETR's whole call takes.

It takes what that launch takes (float32 or int32 tensors on CuPy's current device with contiguous
rows, minimised, at most MAX_COLUMNS rows or columns a member) and returns None for anything
else, and for an answer the summary does not vouch for (a cost that is not finite, or a
member not proved): the generic path then solves, checks and reports it as it always does.
"""

from __future__ import annotations

import threading

import numpy as np

from ... import ragged
from ...cuda import batch_lap
from ...cuda.batch_abi import (MAX_COLUMNS, SUMMARY, SUMMARY_SLOTS, certified_arguments, certified_slots,
                               members_layout)
from ...cuda.ragged_pack import TABLE_FIELDS

_TYPES = {"torch.float32": ("float32", 4), "torch.int32": ("int32", 4)}
# A uniform stack takes this launch up to this many rows or columns a problem: measured against the
# stack kernel up to 300 × 600 (H100, B = 208: as fast or faster); wider ones keep the stack kernel.
LEAN_STACK_COLUMNS = 600
_NOT_PROVED, _NONFINITE = SUMMARY["SUMMARY_NOT_PROVED"], SUMMARY["SUMMARY_NONFINITE"]
_local = threading.local()  # per thread: its pinned block (the table out, the summary back)


def _pinned(count: int) -> np.ndarray:
    """This thread's pinned int64 block of at least ``count`` entries. Reused call after call: each
    call synchronises its stream before it returns (or raises), so the previous call's copies are
    over when the next one writes."""
    block = getattr(_local, "block", None)
    if block is None or block.size < count:
        import cupy

        size = 1 << max(count - 1, 255).bit_length()
        block = np.frombuffer(cupy.cuda.alloc_pinned_memory(8 * size), dtype=np.int64, count=size)
        _local.block = block
    return block


def match_block(block, counts) -> list | None:
    """DETR's pairs per image for a torch CUDA (B, Q, Σk) block and the k_i (a list or a tensor),
    solved, proved and cut as ``lapcli.match`` returns them; None where this launch does not apply
    (see the module's docstring)."""
    kind = _kind(block, 3)
    if kind is None:
        return None
    batch, queries, total = block.shape
    if not total or block.stride() != (queries * total, total, 1):
        return None
    counts = _integers(counts, batch)
    if counts is None or counts.sum() != total:
        return None  # the generic path names what is wrong
    real = np.minimum(counts, queries)

    def table(entries):
        block_table(entries, block.data_ptr(), kind[1], queries, total, counts)

    split = real.tolist()

    def cut(answers):
        pairs = answers["pairs"]
        return list(zip(pairs[0].split(split), pairs[1].split(split)))

    return _launch(block, kind, batch, int(real.max()), max(queries, int(counts.max())), queries, table, cut,
                   pairs=int(real.sum()))


def sized_columns(stack, sizes):
    """``batch_linear_assignment(stack, sizes=(rows, cols))`` for a torch CUDA (B, n, m) stack: the
    (B, n) int64 columns, −1 where a row has none or lies past its problem's rows; None where this
    launch does not apply."""
    kind = _kind(stack, 3)
    if kind is None or len(sizes) != 2:
        return None
    batch, n, m = stack.shape
    rows, cols = _integers(sizes[0], batch), _integers(sizes[1], batch)
    if rows is None or cols is None or not n or not m or stack.stride() != (n * m, m, 1):
        return None
    if rows.max() > n or cols.max() > m:
        return None

    def table(entries):
        stack_table(entries, stack.data_ptr(), kind[1], n, m, rows, cols)

    real = np.minimum(rows, cols)
    widest = max(int(rows.max()), int(cols.max()))
    return _launch(stack, kind, batch, max(int(real.max()), 1), max(widest, 1), n, table,
                   lambda answers: answers["columns"])


def list_columns(matrices):
    """``batch_linear_assignment`` on a list of torch CUDA matrices of one dtype with contiguous
    rows: each one's int64 columns, −1 where a row has none (one (B, n) tensor where they share a
    shape, as a stack's); None where this launch does not apply."""
    first = matrices[0] if matrices else None
    kind = _kind(first, 2)
    if kind is None:
        return None
    # one pass, the fewest tensor queries (each costs ~0.1-0.3 µs, and a list may hold thousands);
    # dtypes are singletons, and a real tensor has no conjugate bit (only its lazy negation)
    tensor_type, dtype, device = type(first), first.dtype, first.get_device()
    entries = []
    for x in matrices:
        if type(x) is not tensor_type or x.dtype is not dtype or x.get_device() != device or x.is_neg():
            return None  # another kind of element, dtype or device: the generic path names it
        shape, stride = x.shape, x.stride()
        if len(shape) != 2 or (stride[1] != 1 and shape[1] > 1):
            return None
        entries.append((x.data_ptr(), stride[0], shape[0], shape[1]))
    entries = np.array(entries, dtype=np.int64)
    rows, cols = entries[:, 2], entries[:, 3]

    def table(out):
        list_table(out, entries)

    real = np.minimum(rows, cols)
    widest = max(int(rows.max()), int(cols.max()))
    split = rows.tolist()
    if (rows == rows[0]).all() and (cols == cols[0]).all():  # one shape: the flat answer is the (B, n) stack's
        cut = lambda answers: answers["flat"].view(len(matrices), int(rows[0]))  # noqa: E731
    else:
        cut = lambda answers: list(answers["flat"].split(split))  # noqa: E731
    return _launch(first, kind, len(matrices), max(int(real.max()), 1), max(widest, 1), max(int(rows.max()), 1),
                   table, cut, flat=int(rows.sum()))


# The members' tables (kernels/ragged_table.cuh: address, row stride, rows, cols, first pair,
# first row), written into ``out`` (B, TABLE_FIELDS); what lapcli.ragged's Members and
# lapcli.cuda.ragged_pack.device_table give for the same members (a CPU test compares them).

def block_table(out: np.ndarray, address: int, itemsize: int, queries: int, total: int, counts: np.ndarray) -> None:
    """Member i of a (B, Q, Σk) block at ``address``: its Q × k_i columns from s_i = k_0 + … + k_{i−1}
    on; its pairs after the previous members' min(Q, k) (the first row is not used: no flat answer)."""
    starts = np.cumsum(counts)
    starts -= counts
    out[:, 0] = address + itemsize * (np.arange(len(counts)) * (queries * total) + starts)
    out[:, 1], out[:, 2], out[:, 3], out[:, 5] = total, queries, counts, 0
    real = np.minimum(counts, queries)
    np.cumsum(real, out=out[:, 4])
    out[:, 4] -= real


def stack_table(out: np.ndarray, address: int, itemsize: int, n: int, m: int, rows: np.ndarray,
                cols: np.ndarray) -> None:
    """Member b of a (B, n, m) stack at ``address``: its top-left rows[b] × cols[b] corner (no pairs,
    no flat answer)."""
    out[:, 0] = address + itemsize * (n * m) * np.arange(len(rows))
    out[:, 1], out[:, 2], out[:, 3], out[:, 4], out[:, 5] = m, rows, cols, 0, 0


def list_table(out: np.ndarray, entries: np.ndarray) -> None:
    """A list's members from their (address, row stride, rows, cols): each member's rows after the
    previous members' in the flat answer (no pairs)."""
    out[:, :4] = entries
    out[:, 4] = 0
    np.cumsum(entries[:, 2], out=out[:, 5])
    out[:, 5] -= entries[:, 2]


def _kind(x, dims: int):
    """(work dtype, itemsize) of a torch CUDA tensor this launch reads, on CuPy's current device,
    with ``dims`` dimensions and no lazy negation (its dtypes are real: no conjugate bit); else None."""
    kind = _TYPES.get(str(getattr(x, "dtype", None)))
    if kind is None or not x.is_cuda or x.dim() != dims or x.is_neg() or not x.shape[0]:
        return None
    import cupy

    return kind if x.get_device() == cupy.cuda.runtime.getDevice() else None


def _integers(values, batch: int) -> np.ndarray | None:
    """``values`` (a list, a tuple, a NumPy array or a tensor) as ``batch`` non-negative int64, else
    None (other kinds, a CuPy array among them, take the generic path)."""
    import torch

    if isinstance(values, torch.Tensor):
        values = values.tolist()
    elif not isinstance(values, (list, tuple, np.ndarray)) or ragged.holds_booleans(values):
        return None  # (a boolean among them: refused there)
    values = np.asarray(values)
    if values.shape != (batch,) or values.dtype.kind not in "iu" or values.min() < 0:
        return None
    return values.astype(np.int64, copy=False)


def _launch(like, kind, batch: int, rows: int, widest: int, n_out: int, table, cut, *, pairs: int = 0,
            flat: int = 0):
    """One certified launch of the batch kernel on ``batch`` members whose table ``table(entries)``
    writes (kernels/ragged_table.cuh's fields): ``rows`` × ``widest`` the largest member oriented,
    ``n_out`` the caller's rows of the (B, n_out) columns, ``pairs`` / ``flat`` the lengths of
    match's pairs and a list's flat answer (0: not written). Returns ``cut(answers)`` of the torch
    views of the answers ("columns", "pairs", "flat") on ``like``'s device, or None where the summary
    does not vouch for them (a cost that is not finite, or a member not proved) or the members are
    too wide. ``cut`` runs while the kernel does (views need no data: the per-image tensors cost
    ~0.7 µs each, 45 µs for 32 images' pairs), before the call's one synchronisation."""
    import cupy
    import torch

    if widest > MAX_COLUMNS:
        return None
    dtype, itemsize = kind
    device = like.get_device()
    k, threads = members_layout(widest, batch, device)
    kernel, _ = batch_lap.compiled_kernel(dtype, k, threads, certify=True, device=device, ragged=True)
    shared = batch_lap.staging_bytes(kernel, device, batch, rows, widest, itemsize, threads)
    grid, block_threads = batch_lap.launch_shape(batch, threads)
    # device: table | the certified launch's results (batch_abi.certified_slots) | pairs (2, Σ) | flat
    table_size = TABLE_FIELDS * batch
    head = table_size + SUMMARY_SLOTS
    columns_at = head + batch
    pairs_at = table_size + certified_slots(batch, n_out)
    flat_at = pairs_at + 2 * pairs
    buffer = torch.empty(flat_at + flat, dtype=torch.int64, device=like.device)
    host = _pinned(head + SUMMARY_SLOTS)
    table(host[:table_size].reshape(batch, TABLE_FIELDS))
    host[table_size:head] = 0  # the summary's counters and keys start at zero
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # one C call; the public query costs ~13 µs
    stream = raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream
    base = buffer.data_ptr()
    summary = base + 8 * table_size
    try:
        cupy.cuda.runtime.memcpyAsync(base, host.ctypes.data, 8 * head, 1, stream)  # 1: host to device
        kernel.launch(grid, block_threads, certified_arguments(
            summary, batch, rows, widest, n_out=n_out, exact=dtype == "int32", members=base,
            pair_rows=base + 8 * pairs_at if pairs else 0, pair_cols=base + 8 * (pairs_at + pairs) if pairs else 0,
            flat_out=base + 8 * flat_at if flat else 0), shared=shared, stream=stream)
        back = host[head:head + SUMMARY_SLOTS]
        cupy.cuda.runtime.memcpyAsync(back.ctypes.data, summary, 8 * SUMMARY_SLOTS, 2, stream)  # 2: to host
        answers = cut({"columns": buffer[columns_at:columns_at + batch * n_out].view(batch, n_out),
                       "pairs": buffer[pairs_at:flat_at].view(2, pairs), "flat": buffer[flat_at:]})
    finally:
        cupy.cuda.runtime.streamSynchronize(stream)  # the pinned block is free for the next call
    return None if back[_NOT_PROVED] or back[_NONFINITE] else answers
