"""Host → device copies through page-locked (pinned) memory.

A pageable host array is copied by the CUDA driver through its own small staging buffers, one
after the other (~17 GB/s measured on the H100 machine for large arrays, ~11 GB/s for a 10 MB
batch stack: the driver's single-threaded copy into its buffers is the limit). Pinning the
caller's array in place (``cudaHostRegister``) costs a page walk of the whole array before the
first byte moves. So ``upload`` copies into pinned memory it keeps, with several threads (NumPy's
copy releases the GIL), and lets the DMA engine take each piece as soon as it is there:

- an array the caller keeps in page-locked memory (cupyx.empty_pinned, torch's pin_memory()):
  one DMA from where it is, no host copy;
- arrays under 4 MB: one plain pageable copy (the pinned routes' overhead would outweigh it);
- a process's first upload, unless it exceeds 2 GB: pinned in place (FIRST_UPLOAD_RING_ABOVE);
- up to 256 MB (batch stacks, most single matrices): one pinned buffer per device, kept and grown
  to fit; copier threads copy its pieces in parallel, each issuing a piece's DMA itself as soon as
  it has copied it (staged_plan), and the caller may prepare its launch meanwhile (start_upload).
  H100 machine, 10 / 33 MB: single-threaded copy into pinned memory 0.9-1.0 / 3.2 ms, four to five
  threads 0.37-0.43 / 1.0-1.1 ms (the host's memory is the limit: more threads are slower); the DMA
  alone 0.20 / 0.66 ms; the whole upload 0.62-0.65 ms for 10 MB (four copiers, one piece each;
  issuing the DMAs from the calling thread: 0.80-0.82), 1.26-1.57 ms for 33 MB (two rounds);
- larger: a ring of pinned slots that pool threads fill and send themselves (its size does not
  grow with the array: the 17 GB of an n = 65,536 int32 matrix pass through 32 slots of 16 MB).

Measured on the H100 machine (16 cores), 17.2 GB int32: pageable copy 1.88 s (9 GB/s); pinning the
array in place 0.44 s + copy 0.31 s + unpinning 0.25 s; the ring 0.39-0.45 s (38-44 GB/s).

Used by both GPU engines for host input (stacks of small problems, and the largest single matrices).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
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
# The kept pinned buffer (_start_staged), an earlier design (the calling thread issued every DMA).
# H100 machine, one process, routes interleaved, medians, ms:
#   size     pageable  ring  threads x pieces each: 2x1  2x4   4x1   4x2   4x4   8x1   8x4
#   10 MB     0.89     1.12                        1.11 1.07  0.84  0.96  1.10  1.06  2.48
#   31 MB     4.91     3.25                        3.48 2.51  2.08  1.79  1.61  1.98  3.16
#   125 MB   20.96     9.31                       15.27 12.99 9.68  8.96  8.81  7.99  6.46
# (the DMA alone, from pinned memory: 0.24 / 0.69 / 2.52). Now: copiers issue their own DMAs, one
# round of pieces below 16 MB, two below 64 MB, four above, 8 copiers from 64 MB (_start_staged).
STAGED_UP_TO = 256 << 20  # arrays up to this size go through one kept pinned buffer (_Staging)
STAGED_COPIERS = 4  # threads copying an array under 64 MB into it (8 above); rounds: see _start_staged
STAGED_THREADS = max(2, min(8, (os.cpu_count() or 1) - 2))


class _SideStream:
    """A route's own stream for the DMAs that pool threads issue. The caller's stream handle may not
    name the same stream in another thread (the per-thread default stream does not), so the copies go
    on this one, ordered after the caller's earlier work (the destination may be memory the caller's
    stream just freed) and before its later work (the launch that reads the data)."""

    def __init__(self):
        import cupy

        self.stream = cupy.cuda.Stream(non_blocking=True)
        self._caller_ready = cupy.cuda.Event(block=False, disable_timing=True)

    def follow(self, caller) -> None:
        """This stream's next work waits for the work ``caller`` has been given so far."""
        self._caller_ready.record(caller)
        self.stream.wait_event(self._caller_ready)

    def hand_back(self, caller, event) -> None:
        """``caller``'s next work waits for everything issued on this stream (``event`` records it)."""
        event.record(self.stream)
        caller.wait_event(event)


class _Ring(_SideStream):
    """``SLOTS`` pinned buffers of one device, each allocated (or grown) when a chunk first needs
    it, each with the CUDA event of the last DMA that read it."""

    def __init__(self):
        import cupy

        super().__init__()
        self.buffers: list[Any] = [None] * SLOTS
        self.events = [cupy.cuda.Event(block=False, disable_timing=True) for _ in range(SLOTS)]
        self.finished = cupy.cuda.Event(block=False, disable_timing=True)
        self.lock = threading.Lock()  # one upload at a time uses the ring

    def buffer(self, slot: int, nbytes: int) -> np.ndarray:
        """The slot's buffer as bytes; call only once the slot's last DMA has completed."""
        import cupy

        current = self.buffers[slot]
        if current is None or current.size < nbytes:
            memory = cupy.cuda.alloc_pinned_memory(max(nbytes, MIN_CHUNK_BYTES))
            self.buffers[slot] = current = np.frombuffer(memory, dtype=np.uint8)
        return current


class _Staging(_SideStream):
    """One pinned buffer of one device, grown (to a power of two) when an array needs more, and the
    CUDA event of the last DMA that read it."""

    def __init__(self):
        import cupy

        super().__init__()
        self.buffer: np.ndarray | None = None
        self.done = cupy.cuda.Event(block=False, disable_timing=True)
        self.lock = threading.Lock()  # one upload at a time uses the buffer (held until its wait)
        self.owner: int | None = None  # the thread whose upload holds the lock

    def of_size(self, nbytes: int) -> np.ndarray:
        """The buffer as bytes, at least ``nbytes``; call only once ``done`` has completed."""
        import cupy

        if self.buffer is None or self.buffer.size < nbytes:
            self.buffer = None  # let the old one go before the new one is allocated
            size = max(MIN_CHUNK_BYTES, 1 << (nbytes - 1).bit_length())
            self.buffer = np.frombuffer(cupy.cuda.alloc_pinned_memory(size), dtype=np.uint8)
        return self.buffer


_stagings: dict[int, _Staging] = {}
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
    current device. The copies are ordered with the current stream: work launched on it after
    this call sees the data; the call returns once every piece's DMA has been issued, so the last
    of them may still be in flight. A page-locked ``host`` (the caller's own pinned memory) is read
    by the DMA in place: it must not change until the stream's work is done (lapcli's calls
    synchronise before they return). ``chunk_bytes`` and ``threads`` shape the ring (arrays above
    STAGED_UP_TO)."""
    return start_upload(host, out, chunk_bytes=chunk_bytes, threads=threads).wait()


class PendingUpload:
    """An upload whose copier threads may still be copying and issuing DMAs. ``wait`` returns the
    device array once every DMA is issued (work launched after it on the stream sees the data) and
    raises a copier's error, if any; call it before the next upload to the same device."""

    def __init__(self, out, copiers=(), finish=None):
        self.out = out
        self._copiers = copiers
        self._finish = finish

    def wait(self):
        error = None
        try:
            for copier in self._copiers:
                raised = copier.exception()  # waits for every copier, even after an error
                error = error or raised
        finally:
            if self._finish is not None:  # (also when interrupted: no copier may still be writing)
                futures_wait(self._copiers)
                finish, self._finish = self._finish, None
                finish()
        if error is not None:
            raise error
        return self.out

    def __del__(self):  # dropped without a wait: the buffer must not stay locked
        if getattr(self, "_finish", None) is not None:
            futures_wait(self._copiers)
            self._finish()


def start_upload(host: np.ndarray, out=None, *, chunk_bytes: int = CHUNK_BYTES,
                 threads: int = THREADS) -> PendingUpload:
    """``upload`` without the wait: on the kept pinned buffer's route (most batch stacks) the
    copier threads run while the caller prepares its launch; the other routes finish here."""
    import cupy

    host = np.ascontiguousarray(host)
    if out is None:
        out = cupy.empty(host.shape, dtype=host.dtype)
    elif out.nbytes != host.nbytes or not out.flags.c_contiguous:
        raise ValueError("out must be a C-contiguous device array of the host array's size")
    nbytes = host.nbytes
    if nbytes == 0:
        return PendingUpload(out)
    if nbytes >= PAGE_LOCKED_CHECK_FROM and _page_locked(host):
        # the caller keeps it page-locked (cupyx.empty_pinned, a torch tensor's pin_memory()): the
        # DMA engine reads it where it is, on the caller's stream, with no copy on the host
        cupy.cuda.runtime.memcpyAsync(out.data.ptr, host.ctypes.data, nbytes, cupy.cuda.runtime.memcpyHostToDevice,
                                      cupy.cuda.get_current_stream().ptr)
        return PendingUpload(out)
    first = _uploads["seen"] == 0
    _uploads["seen"] += 1
    if nbytes < PAGEABLE_BELOW:
        out.set(host)
    elif first and nbytes < FIRST_UPLOAD_RING_ABOVE:
        _copy_pinned_in_place(host, out)
    elif nbytes <= STAGED_UP_TO:
        return _start_staged(host.reshape(-1).view(np.uint8), out)
    else:
        _copy_ring(host.reshape(-1).view(np.uint8), out, chunk_bytes, threads)
    return PendingUpload(out)


PAGE_LOCKED_CHECK_FROM = 64 << 10  # smaller arrays: the check (two driver calls) is not worth it
_MEMORY_TYPE_HOST = 1  # cudaMemoryTypeHost: page-locked host memory (0 is unregistered, pageable)


def _page_locked(host: np.ndarray) -> bool:
    """Whether the bytes of ``host`` (C-contiguous) are page-locked memory the driver knows: its
    first and last byte (an array straddling a registered range's end is sent the usual way)."""
    import cupy

    runtime = cupy.cuda.runtime
    address = host.ctypes.data
    try:
        return all(getattr(runtime.pointerGetAttributes(at), "type", None) == _MEMORY_TYPE_HOST
                   for at in (address, address + host.nbytes - 1))
    except Exception:  # noqa: BLE001 - a driver that cannot tell: the usual route is always right
        return False


def _copy_ring(source: np.ndarray, out, chunk_bytes: int, threads: int) -> None:
    """Copy the bytes ``source`` into ``out`` through the ring of pinned slots (_Ring)."""
    import cupy

    nbytes = source.size
    chunk_bytes = max(min(chunk_bytes, MIN_CHUNK_BYTES), min(chunk_bytes, -(-nbytes // threads)))
    chunks = -(-nbytes // chunk_bytes)
    threads = max(1, min(threads, chunks, SLOTS // 2))
    device = cupy.cuda.runtime.getDevice()
    caller = cupy.cuda.get_current_stream()
    ring = _ring(device)
    stream = ring.stream
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
        ring.follow(caller)
        if threads == 1:
            for index in range(chunks):
                copy_chunk(index)
        else:
            for future in [_pool(threads).submit(copy_chunk, index) for index in range(chunks)]:
                future.result()
        ring.hand_back(caller, ring.finished)
        if failure:
            stream.synchronize()
            raise failure[0]


def staged_plan(nbytes: int, copiers: int, rounds: int) -> list[list[tuple[int, int]]]:
    """The kept buffer's pieces, per copier: ``rounds`` rounds of ``copiers`` equal pieces, copier
    c taking piece c of each round in turn. The first rounds' DMAs then run while the later
    rounds are copied (the DMA engine outruns the copies), and only the last round's DMAs follow
    the last copy."""
    count = copiers * rounds
    step = -(-nbytes // count)
    pieces = [(begin, min(begin + step, nbytes)) for begin in range(0, nbytes, step)]
    return [pieces[c::copiers] for c in range(copiers)]


def _start_staged(source: np.ndarray, out) -> PendingUpload:
    """Copy the bytes ``source`` into ``out`` through the device's kept pinned buffer (_Staging):
    pool threads (copiers) copy its pieces (staged_plan), each issuing a piece's DMA (on the
    buffer's side stream, which the caller's stream then waits for) as soon as it has copied it;
    nothing waits on a hand-off between threads, and the calling thread is free until
    PendingUpload.wait. One pending upload per device: a second from the same thread raises."""
    import cupy

    nbytes = source.size
    device = cupy.cuda.runtime.getDevice()
    caller = cupy.cuda.get_current_stream()
    with _rings_lock:
        if device not in _stagings:
            _stagings[device] = _Staging()
        staging = _stagings[device]
    if staging.owner == threading.get_ident():
        raise RuntimeError(f"this thread's upload to device {device} is still pending: wait for it first")
    copiers = min(STAGED_THREADS, STAGED_COPIERS if nbytes < (64 << 20) else 8)
    # one round under 16 MB: a second costs more than its overlap saves (H100 machine, 10 MB: one
    # round 0.62-0.65 ms, two 0.67-0.78); 33 MB: two rounds 1.26-1.57 ms, one 1.59-1.77
    plan = staged_plan(nbytes, copiers, 1 if nbytes < (16 << 20) else 2 if nbytes < (64 << 20) else 4)
    staging.lock.acquire()  # released by the PendingUpload's wait (one upload at a time uses the buffer)
    staging.owner = threading.get_ident()
    started = []
    stream = staging.stream
    try:
        staging.done.synchronize()  # the last upload's DMAs have read the buffer
        buffer = staging.of_size(nbytes)
        address, target = buffer.ctypes.data, out.data.ptr
        staging.follow(caller)

        def copier(pieces: list[tuple[int, int]]) -> None:
            cupy.cuda.runtime.setDevice(device)  # pool threads start on device 0
            for begin, end in pieces:
                np.copyto(buffer[begin:end], source[begin:end])
                cupy.cuda.runtime.memcpyAsync(target + begin, address + begin, end - begin,
                                              cupy.cuda.runtime.memcpyHostToDevice, stream.ptr)

        pool = _pool(copiers)
        for pieces in plan:
            started.append(pool.submit(copier, pieces))
    except BaseException:
        futures_wait(started)  # no thread may still be writing the buffer once it is released
        staging.owner = None
        staging.lock.release()
        raise

    def finish() -> None:
        staging.hand_back(caller, staging.done)
        staging.owner = None
        staging.lock.release()

    return PendingUpload(out, started, finish)


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
