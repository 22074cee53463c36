"""Engine ``cuda-batch`` on DETR's matcher block held by torch on the GPU: ``lapcli.match``'s call of
every training step, in the fewest host operations that launch, prove and hand back its answer.

It is the engine's in-place launch (lapcli.engines.cuda.batch_members: the same kernel, the same
members' table, the same fused certificate), reached without the generic path's conversions: the
members' table is written straight from the block's address and the target counts into a
reused pinned block, uploaded together with the zeroed certificate summary in one copy; the
launch's one device buffer (table, summary, proof, pairs) is a torch allocation on torch's current
stream, where the launch is queued; one 48-byte copy back is the call's one synchronisation; the
pairs are cut per image by two ``split`` calls. At 32 × 300 × 50 on an H100 machine the generic
path spent ~0.35 ms of host work per call (timers around its functions: reading the block 61 µs,
the table 40 µs, the launch 59 µs, the result 30 µs), about what HA4DETR's whole call takes.

It takes what that launch takes (a C-contiguous float32 or int32 block on CuPy's current device,
minimised, at most MAX_COLUMNS targets or queries, at least one target) and returns None for
anything else, and for an answer the summary does not vouch for (a cost that is not finite, or a
member not proved): the generic path then solves, checks and reports it as it always does.
"""

from __future__ import annotations

import threading

import numpy as np

from ...cuda import batch_lap
from ...cuda.batch_abi import _STAMP_OFFSET, CERTIFY_STATS, MAX_COLUMNS, SUMMARY, SUMMARY_SLOTS, choose_layout
from ...cuda.ragged_pack import TABLE_FIELDS

_TYPES = {"torch.float32": ("float32", 4), "torch.int32": ("int32", 4)}
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
    import torch

    kind = _TYPES.get(str(block.dtype))
    if kind is None or not block.is_cuda or block.dim() != 3 or block.is_neg() or block.is_conj():
        return None
    batch, queries, total = block.shape
    if not batch or not total or block.stride() != (queries * total, total, 1):
        return None
    counts = np.asarray(counts.tolist() if isinstance(counts, torch.Tensor) else counts)
    if counts.shape != (batch,) or counts.dtype.kind not in "iu" or counts.min() < 0 or counts.sum() != total:
        return None  # the generic path names what is wrong
    import cupy

    device = block.get_device()
    widest = max(queries, int(counts.max()))
    if device != cupy.cuda.runtime.getDevice() or widest > MAX_COLUMNS:
        return None
    dtype, itemsize = kind
    real = np.minimum(counts, queries)
    rows = int(real.max())
    k, threads = choose_layout(widest)
    kernel, _ = batch_lap.compiled_kernel(dtype, k, threads, certify=True, device=device, ragged=True)
    shared = batch_lap.staging_bytes(kernel, device, batch, rows, widest, itemsize, threads)
    grid, block_threads = batch_lap.launch_shape(batch, threads)
    pairs_total = int(real.sum())
    # device: table | summary | objectives | columns (B, Q) | stats | status | pairs (2, Σ)
    table_size = TABLE_FIELDS * batch
    head = table_size + SUMMARY_SLOTS
    columns_at = head + batch
    stats_at = columns_at + batch * queries
    status_at = stats_at + CERTIFY_STATS * batch
    pairs_at = status_at + batch
    buffer = torch.empty(pairs_at + 2 * pairs_total, dtype=torch.int64, device=block.device)
    host = _pinned(head + SUMMARY_SLOTS)
    table = host[:table_size].reshape(batch, TABLE_FIELDS)
    starts = np.cumsum(counts)
    starts -= counts
    table[:, 0] = block.data_ptr() + itemsize * (np.arange(batch) * (queries * total) + starts)
    table[:, 1], table[:, 2], table[:, 3] = total, queries, counts
    np.cumsum(real, out=table[:, 4])
    table[:, 4] -= real
    table[:, 5] = np.arange(0, batch * queries, queries)
    host[table_size:head] = 0  # the summary's counters and keys start at zero
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # one C call; the public query costs ~13 µs
    stream = raw(device) if raw is not None else torch.cuda.current_stream(device).cuda_stream
    base = buffer.data_ptr()
    summary = base + 8 * table_size
    try:
        cupy.cuda.runtime.memcpyAsync(base, host.ctypes.data, 8 * head, 1, stream)  # 1: host to device
        kernel.launch(grid, block_threads, (
            0, batch, rows, widest, 0, 0, 0, base + 8 * status_at, summary + _STAMP_OFFSET, 0, 0, 0, 0, 0, queries,
            int(dtype == "int32"), base + 8 * columns_at, base + 8 * stats_at, summary + 8 * SUMMARY_SLOTS, summary,
            base, base + 8 * pairs_at, base + 8 * (pairs_at + pairs_total), 0), shared=shared, stream=stream)
        back = host[head:head + SUMMARY_SLOTS]
        cupy.cuda.runtime.memcpyAsync(back.ctypes.data, summary, 8 * SUMMARY_SLOTS, 2, stream)  # 2: to host
    finally:
        cupy.cuda.runtime.streamSynchronize(stream)  # the pinned block is free for the next call
    if back[_NOT_PROVED] or back[_NONFINITE]:
        return None
    split = real.tolist()
    pairs = buffer[pairs_at:].view(2, pairs_total)
    return list(zip(pairs[0].split(split), pairs[1].split(split)))
