"""One CUDA runtime for lapcli's kernels: compile, load, launch, allocate, time, copy back.

- compile: lapcli.cuda.compiler (NVRTC to a cubin, one on-disk cache keyed by source, options and
  architecture), loaded once per process into a device's primary context (lapcli.cuda.driver.Gpu);
- launch: the driver's cuLaunchKernel / cuLaunchCooperativeKernel, the arguments packed into one
  reused buffer of 8-byte slots per kernel and thread (CuPy converted each argument of a 20-argument
  launch on every call, ~25 µs on the H100 machine; packing the slots takes ~1 µs);
- memory: one allocation per solve carved into named buffers (Arena): from CuPy's memory pool when
  the solve's arrays are CuPy's (the buffers are then CuPy arrays too), else from the driver, so
  that a one-shot ``lap solve`` of a host matrix never imports CuPy (lapcli.cuda.driver says why);
- events and copies back through the driver, on the caller's stream.

CuPy stays the array library (device inputs, work matrices built on the device, device results,
the pinned uploads of lapcli.cuda.staging); of lapcli's own code it runs only element-wise and
reduction kernels it generates itself (the certificate's reduction for inputs its read pass does
not take). CuPy and the
driver share each device's primary context, so a CuPy array's address is a kernel argument and a
CuPy stream's handle a launch's stream.
"""

from __future__ import annotations

import struct
import threading
import time
import weakref
from dataclasses import dataclass

import numpy as np

from ..errors import SolverError
from .compiler import compile_options, load_or_compile
from .driver import _check, _driver, open_gpu

# A kernel signature is one character per parameter; each is passed in an 8-byte slot (a 32-bit
# int in its slot's low half: the driver reads as many bytes as the parameter has).
SLOT_CODES = {"p": "Q", "u": "Q", "i": "q", "q": "q", "d": "d", "f": "f4x"}  # pointer, uint64, int, int64, double, float


class Kernel:
    """One loaded kernel with its signature (SLOT_CODES' letters, e.g. "pppip")."""

    def __init__(self, function, name: str, signature: str):
        self.function = function
        self.name = name
        self.signature = signature
        self._pack_into = struct.Struct("<" + "".join(SLOT_CODES[c] for c in signature)).pack_into
        self._local = threading.local()  # per thread: the driver reads the slots while a launch call runs
        driver = _driver()
        self._launch, self._launch_cooperative = driver.cuLaunchKernel, driver.cuLaunchCooperativeKernel
        self._success = driver.CUresult.CUDA_SUCCESS
        self._static_shared = None

    def _slots(self):
        local = self._local
        if not hasattr(local, "pointer"):
            slots = np.zeros(max(len(self.signature), 1), dtype=np.uint64)
            addresses = slots.ctypes.data + 8 * np.arange(slots.size, dtype=np.uint64)
            local.arrays = (slots, addresses)
            local.bytes = memoryview(slots).cast("B")
            local.pointer = addresses.ctypes.data  # the driver's void** kernelParams
        return local

    def launch(self, grid: int, block: int, args: tuple, *, shared: int = 0, stream: int = 0,
               cooperative: bool = False) -> None:
        """Queue one launch of ``grid`` blocks of ``block`` threads on ``stream`` (a handle: 0, or
        a CuPy stream's ``ptr``); ``args`` are ints (device addresses included) and floats in the
        signature's order."""
        local = self._slots()
        self._pack_into(local.bytes, 0, *args)
        if cooperative:
            status, = self._launch_cooperative(self.function, grid, 1, 1, block, 1, 1, shared, stream, local.pointer)
        else:
            status, = self._launch(self.function, grid, 1, 1, block, 1, 1, shared, stream, local.pointer, 0)
        if status != self._success:
            raise SolverError(f"launching {self.name} failed: {_driver().cuGetErrorName(status)[1].decode()}")

    def resident_blocks(self, block: int, shared: int) -> int:
        """Blocks of ``block`` threads and ``shared`` dynamic bytes one multiprocessor holds."""
        return int(_check(_driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(self.function, block, shared)))

    def allow_shared(self, shared: int) -> None:
        """Opt in to ``shared`` dynamic bytes where a block's static and dynamic shared memory
        together pass 48 KB: the driver refuses such a launch otherwise (CUDA_ERROR_INVALID_VALUE),
        with the dynamic part alone below 48 KB too."""
        if shared + self.static_shared() > 48 * 1024:
            driver = _driver()
            _check(driver.cuFuncSetAttribute(
                self.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared))

    def static_shared(self) -> int:
        """Bytes of static shared memory a block of this kernel holds (asked of the driver once)."""
        if self._static_shared is None:
            driver = _driver()
            self._static_shared = int(_check(driver.cuFuncGetAttribute(
                driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, self.function)))
        return self._static_shared

    def allow_wide_clusters(self) -> None:
        """Clusters of more than 8 blocks (Hopper takes 16) are not portable: a kernel must opt in."""
        driver = _driver()
        _check(driver.cuFuncSetAttribute(
            self.function, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1))


@dataclass(frozen=True)
class Program:
    """A kernel source and how to compile it: label (the cache files' prefix), -D defines, and the
    kernels wanted: key -> (C++ name expression, signature)."""

    label: str
    source: str
    defines: tuple[str, ...]
    kernels: tuple[tuple[str, str, str], ...]  # (key, name expression, signature)


def load(program: Program, gpu=None) -> tuple[dict[str, Kernel], float]:
    """The program's kernels on ``gpu`` (default: CuPy's current device), compiled or read from the
    disk cache the first time in this process; (kernels by key, ms spent loading now: 0 if loaded)."""
    gpu = gpu if gpu is not None else current_gpu()
    found = gpu.kernels.get(program)
    if found is not None:
        return found, 0.0
    start = time.perf_counter()
    functions = load_or_compile(gpu, program.label, program.source, compile_options(program.defines, gpu.arch),
                                {name: expression for name, expression, _ in program.kernels})
    gpu.kernels[program] = {name: Kernel(functions[name], expression, signature)
                            for name, expression, signature in program.kernels}
    return gpu.kernels[program], (time.perf_counter() - start) * 1e3


def current_gpu():
    """The Gpu of CuPy's current device (the caller uses CuPy), its primary context made current on
    this thread: the driver calls that follow need a current context, and CuPy binds one to a thread
    only at its first runtime call there."""
    import cupy

    gpu = open_gpu(cupy.cuda.runtime.getDevice())
    gpu.make_current()
    return gpu


class Arena:
    """One device allocation carved into named buffers: ``offsets`` name -> byte offset, ``kinds``
    name -> (dtype, elements). From CuPy's pool when ``on_cupy`` (``array(name)`` is then a CuPy
    view), else from the driver, freed with the arena."""

    def __init__(self, offsets: dict, kinds: dict, total: int, *, on_cupy: bool):
        self.offsets, self.kinds, self.total, self.on_cupy = offsets, kinds, total, on_cupy
        self._views = {}
        if on_cupy:
            import cupy

            self.memory = cupy.cuda.alloc(total)
            self.base = self.memory.ptr
        else:
            self.memory = None
            self.base = int(_check(_driver().cuMemAlloc(total)))
            self._free = weakref.finalize(self, _free_driver_memory, self.base)

    def address(self, name: str) -> int:
        return self.base + self.offsets[name]

    def array(self, name: str):
        """The buffer as a CuPy array (CuPy-backed arenas only), made once: a CuPy view costs
        microseconds, and the stepwise engine reads its flags after every step."""
        view = self._views.get(name)
        if view is None:
            import cupy

            kind, count = self.kinds[name]
            view = self._views[name] = cupy.ndarray((count,), dtype=kind, memptr=self.memory + self.offsets[name])
        return view

    def memset(self, begin: int, end: int, byte: int, stream: int = 0) -> None:
        if end > begin:
            _check(_driver().cuMemsetD8Async(self.base + begin, byte, end - begin, stream))

    def upload(self, name: str, host: np.ndarray, stream: int = 0) -> None:
        """Copy a host array into a buffer; a pageable source is staged before this returns."""
        _check(_driver().cuMemcpyHtoDAsync(self.address(name), host.ctypes.data, host.nbytes, stream))

    def to_host(self, names, stream: int = 0) -> dict[str, np.ndarray]:
        """Host copies of the named buffers in one copy of the span that holds them, after the
        work queued on ``stream``."""
        begin = min(self.offsets[name] for name in names)
        end = max(self.offsets[name] + self.kinds[name][1] * np.dtype(self.kinds[name][0]).itemsize for name in names)
        span = np.empty(end - begin, dtype=np.uint8)
        driver = _driver()
        _check(driver.cuMemcpyDtoHAsync(span.ctypes.data, self.base + begin, end - begin, stream))
        _check(driver.cuStreamSynchronize(stream))
        result = {}
        for name in names:
            kind, count = self.kinds[name]
            at = self.offsets[name] - begin
            result[name] = span[at:at + count * np.dtype(kind).itemsize].view(kind)
        return result

    def free(self) -> None:
        """Give driver memory back now (CuPy's returns to its pool when the views are dropped)."""
        if not self.on_cupy:
            self._free()


def _free_driver_memory(base: int) -> None:
    _driver().cuMemFree(base)


class Event:
    """A CUDA event (timing enabled) on the current context."""

    def __init__(self):
        driver = _driver()
        self.handle = _check(driver.cuEventCreate(0))
        self._record, self._success = driver.cuEventRecord, driver.CUresult.CUDA_SUCCESS
        self._destroy = driver.cuEventDestroy  # bound now: at exit the module's globals may be gone

    def __del__(self):  # cheaper than a weakref.finalize per event (the stepwise engine makes two a step)
        handle = getattr(self, "handle", None)
        if handle is not None:
            self._destroy(handle)

    def record(self, stream: int = 0) -> None:
        status, = self._record(self.handle, stream)  # on every call of a small batch: no _check
        if status != self._success:
            _check((status,))

    def synchronize(self) -> None:
        _check(_driver().cuEventSynchronize(self.handle))

    def ms_since(self, earlier: Event) -> float:
        """Milliseconds from ``earlier`` to this event (both recorded and complete)."""
        return float(_check(_driver().cuEventElapsedTime(earlier.handle, self.handle)))


_reused: dict[tuple, tuple] = {}  # (thread, device, role) -> events reused call after call


def reused_events(device: int, role: str, count: int) -> tuple[Event, ...]:
    """``count`` timing events for one role (a launch, a batch call) on one device and thread:
    created once, so that a call records instead of creating them."""
    key = (threading.get_ident(), device, role)
    if key not in _reused:
        open_gpu(device).make_current()
        _reused[key] = tuple(Event() for _ in range(count))
    return _reused[key]


def current_stream() -> int:
    """CuPy's current stream handle (0: the legacy default stream)."""
    import cupy

    return cupy.cuda.get_current_stream().ptr
