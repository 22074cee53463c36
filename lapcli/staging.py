"""Host → device copies through a ring of page-locked (pinned) buffers.

A pageable host array is copied by the CUDA driver through its own small staging buffers, one
after the other (~17 GB/s measured on the H100 machine). Pinning the caller's array in place
(``cudaHostRegister``) costs a page walk of the whole array before the first byte moves. Instead,
``upload`` cuts the array into chunks; a pool of threads copies each chunk into one slot of a
small ring of pinned buffers (NumPy's copy releases the GIL) and issues that slot's asynchronous
DMA, so host copies, DMAs and the next chunks' host copies overlap. A slot is refilled only after
the DMA that read it has completed (one CUDA event per slot). The ring is allocated once per
device and process and kept: its size does not grow with the array (the 17 GB of an n = 65,536
int32 matrix pass through ``slots × chunk_bytes`` of pinned memory).

Used by both GPU engines for host input (issue #13's stacks, issue #15's largest matrices).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

CHUNK_BYTES = 8 << 20
THREADS = max(1, min(8, os.cpu_count() or 1))
SLOTS_PER_THREAD = 2


class _Ring:
    """``slots`` pinned buffers of ``chunk_bytes`` on one device, each with the CUDA event of the
    last DMA that read it."""

    def __init__(self, chunk_bytes: int, slots: int):
        import cupy

        self.chunk_bytes = chunk_bytes
        self.slots = slots
        self.memory = cupy.cuda.alloc_pinned_memory(chunk_bytes * slots)
        self.view = np.frombuffer(self.memory, dtype=np.uint8, count=chunk_bytes * slots)
        self.events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(slots)]
        self.lock = threading.Lock()  # one upload at a time uses the ring

    def slot(self, index: int) -> np.ndarray:
        start = index * self.chunk_bytes
        return self.view[start:start + self.chunk_bytes]


_rings: dict[tuple[int, int, int], _Ring] = {}
_rings_lock = threading.Lock()
_pools: dict[int, ThreadPoolExecutor] = {}


def _ring(device: int, chunk_bytes: int, slots: int) -> _Ring:
    with _rings_lock:
        key = (device, chunk_bytes, slots)
        if key not in _rings:
            _rings[key] = _Ring(chunk_bytes, slots)
        return _rings[key]


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
    source = host.reshape(-1).view(np.uint8)
    chunk_bytes = max(4096, min(chunk_bytes, -(-nbytes // threads)))  # every thread gets work
    chunks = -(-nbytes // chunk_bytes)
    threads = max(1, min(threads, chunks))
    device = cupy.cuda.runtime.getDevice()
    stream = cupy.cuda.get_current_stream()
    ring = _ring(device, chunk_bytes, max(2, SLOTS_PER_THREAD * threads))
    issued = [threading.Event() for _ in range(chunks)]
    failure: list[BaseException] = []

    def copy_chunk(index: int) -> None:
        try:
            slot = index % ring.slots
            if index >= ring.slots:  # the slot's previous chunk in this upload has issued its DMA
                issued[index - ring.slots].wait()
            ring.events[slot].synchronize()  # ... and that DMA (or the last upload's) has read the slot
            begin = index * chunk_bytes
            end = min(begin + chunk_bytes, nbytes)
            buffer = ring.slot(slot)
            np.copyto(buffer[:end - begin], source[begin:end])
            cupy.cuda.runtime.setDevice(device)
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
