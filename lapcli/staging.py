"""Host → device copies through a ring of page-locked (pinned) buffers.

A pageable host array is copied by the CUDA driver through its own small staging buffers, one
after the other (~17 GB/s measured on the H100 machine). Pinning the caller's array in place
(``cudaHostRegister``) costs a page walk of the whole array before the first byte moves. Instead,
``upload`` cuts the array into chunks; a pool of threads copies each chunk into one slot of a
small ring of pinned buffers (NumPy's copy releases the GIL) and issues that slot's asynchronous
DMA, so host copies, DMAs and the next chunks' host copies overlap. A slot is refilled only after
the DMA that read it has completed (one CUDA event per slot). The ring is allocated once per
device and process and kept, each slot allocated when first used: its size does not grow with the
array (the 17 GB of an n = 65,536 int32 matrix pass through 32 slots of 16 MB). Arrays under 4 MB
take one plain pageable copy; a process's first upload, unless it exceeds 2 GB, is pinned in
place instead of building the ring (see FIRST_UPLOAD_RING_ABOVE).

Measured on the H100 machine (16 cores), 17.2 GB int32: pageable copy 1.88 s (9 GB/s); pinning the
array in place 0.44 s + copy 0.31 s + unpinning 0.25 s; this ring 0.39-0.45 s (38-44 GB/s).

Used by both GPU engines for host input (issue #13's stacks, issue #15's largest matrices).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

# Chosen on the H100 machine (16 cores; docs/scaling.md). 17.2 GB, medians of 3, ms, one machine:
#   chunk \ threads    6     8    12    14
#   8 MB              701   605   733  1050
#   16 MB             645   541   454   392
#   32 MB             628   522   422   398
# Each chunk hands the GIL around several times (copy, DMA call, event): with many threads small
# chunks queue on it. 10 MB (a batch stack) is best in chunks of 4 MB.
CHUNK_BYTES = 16 << 20  # the largest chunk
MIN_CHUNK_BYTES = 4 << 20  # below this a chunk's Python overhead outweighs its copy
PAGEABLE_BELOW = 4 << 20  # smaller arrays: one pageable copy beats the ring's overhead
# Allocating pinned memory costs ~0.65 ms per MB (170 ms for 256 MB, measured; a full ring is 512 MB),
# so a process's first upload does not build the ring unless it is large enough to repay it (a
# one-shot `lap solve` of a 64 MB matrix: h2d 56 ms through a fresh ring). It pins the caller's
# array in place instead (cudaHostRegister: 5 ms for 64 MB, 17 ms for 256 MB, but 1.0 s for 17 GB
# where the ring takes 0.4 s); later uploads, repeated calls of a long-lived process, use the ring.
FIRST_UPLOAD_RING_ABOVE = 2 << 30
HOST_REGISTER_READ_ONLY = 8  # cudaHostRegisterReadOnly: pins a read-only mapping (np.load's mmap) too
THREADS = max(2, min(14, (os.cpu_count() or 1) - 2))  # leave cores to the caller and the driver
SLOTS = 32


class _Ring:
    """``SLOTS`` pinned buffers of one device, each allocated (or grown) when a chunk first needs
    it, each with the CUDA event of the last DMA that read it."""

    def __init__(self):
        import cupy

        self.buffers: list[Any] = [None] * SLOTS
        self.events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(SLOTS)]
        self.lock = threading.Lock()  # one upload at a time uses the ring

    def buffer(self, slot: int, nbytes: int) -> np.ndarray:
        """The slot's buffer as bytes; call only once the slot's last DMA has completed."""
        import cupy

        current = self.buffers[slot]
        if current is None or current.size < nbytes:
            memory = cupy.cuda.alloc_pinned_memory(max(nbytes, MIN_CHUNK_BYTES))
            self.buffers[slot] = current = np.frombuffer(memory, dtype=np.uint8)
        return current


_uploads = {"seen": 0}
_rings: dict[int, _Ring] = {}
_rings_lock = threading.Lock()
_pools: dict[int, ThreadPoolExecutor] = {}


def _ring(device: int) -> _Ring:
    with _rings_lock:
        if device not in _rings:
            _rings[device] = _Ring()
        return _rings[device]


def _pool(threads: int) -> ThreadPoolExecutor:
    with _rings_lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="lapcli-upload")
        return _pools[threads]


def upload(host: np.ndarray, out=None, *, chunk_bytes: int = CHUNK_BYTES, threads: int = THREADS):
    """Copy ``host`` into ``out`` (a new CuPy array of the same shape and dtype if None) on the
    current device. The DMAs are ordered on the current stream: work launched on that stream after
    this call sees the data; the call returns once every chunk's DMA has been issued, so at most
    one ring's worth of copies may still be in flight."""
    import cupy

    host = np.ascontiguousarray(host)
    if out is None:
        out = cupy.empty(host.shape, dtype=host.dtype)
    elif out.nbytes != host.nbytes or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous device array of the host array's size")
    nbytes = host.nbytes
    if nbytes == 0:
        return out
    first = _uploads["seen"] == 0
    _uploads["seen"] += 1
    if nbytes < PAGEABLE_BELOW:
        out.set(host)
        return out
    if first and nbytes < FIRST_UPLOAD_RING_ABOVE:
        _copy_pinned_in_place(host, out)
        return out
    source = host.reshape(-1).view(np.uint8)
    chunk_bytes = max(min(chunk_bytes, MIN_CHUNK_BYTES), min(chunk_bytes, -(-nbytes // threads)))
    chunks = -(-nbytes // chunk_bytes)
    threads = max(1, min(threads, chunks, SLOTS // 2))
    device = cupy.cuda.runtime.getDevice()
    stream = cupy.cuda.get_current_stream()
    ring = _ring(device)
    issued = [threading.Event() for _ in range(chunks)]
    failure: list[BaseException] = []

    def copy_chunk(index: int) -> None:
        try:
            cupy.cuda.runtime.setDevice(device)  # pool threads start on device 0
            slot = index % SLOTS
            if index >= SLOTS:  # the slot's previous chunk in this upload has issued its DMA
                issued[index - SLOTS].wait()
            ring.events[slot].synchronize()  # ... and that DMA (or the last upload's) has read the slot
            begin = index * chunk_bytes
            end = min(begin + chunk_bytes, nbytes)
            buffer = ring.buffer(slot, chunk_bytes)
            np.copyto(buffer[:end - begin], source[begin:end])
            cupy.cuda.runtime.memcpyAsync(out.data.ptr + begin, buffer.ctypes.data, end - begin,
                                          cupy.cuda.runtime.memcpyHostToDevice, stream.ptr)
            ring.events[slot].record(stream)
        except BaseException as error:  # noqa: BLE001 - re-raised in the caller's thread
            failure.append(error)
        finally:
            issued[index].set()

    with ring.lock:
        if threads == 1:
            for index in range(chunks):
                copy_chunk(index)
        else:
            for future in [_pool(threads).submit(copy_chunk, index) for index in range(chunks)]:
                future.result()
        if failure:
            stream.synchronize()
            raise failure[0]
    return out


def _copy_pinned_in_place(host: np.ndarray, out) -> None:
    """Page-lock ``host`` for one synchronous copy (a read-only memory map read-only), then unlock
    it; a plain pageable copy if the driver refuses (e.g. locked-memory limits)."""
    import cupy

    pointer = host.ctypes.data
    try:
        cupy.cuda.runtime.hostRegister(pointer, host.nbytes, 0 if host.flags.writeable else HOST_REGISTER_READ_ONLY)
    except Exception:  # noqa: BLE001 - any refusal: the pageable copy still works
        out.set(host)
        return
    try:
        out.set(host)
        cupy.cuda.get_current_stream().synchronize()  # the DMA has read it before it is unlocked
    finally:
        cupy.cuda.runtime.hostUnregister(pointer)
