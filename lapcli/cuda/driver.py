"""The CUDA driver API (NVIDIA's ``cuda.bindings``), for what needs no CuPy: the device count and
compute capability (``lap info``, ``auto``), one device's primary context, a device allocation
carved into buffers, kernel arguments, copies back.

Why not CuPy everywhere: a one-shot ``lap solve`` of a host matrix spent more on CuPy's import and
set-up than on the solve (H100, n = 4096: ``import cupy`` 0.25 s, the CUDA runtime and context
0.21 s, loading cached kernels 0.10 s, against a 0.13 s kernel; docs/dispatch.md). Through the
driver a process needs the driver's initialisation and the device's primary context, nothing else:
``cuda.bindings.driver`` imports in ~20 ms.

The ``lap`` process may initialise the driver in a thread while Python imports (lapcli.cli.gpu_start);
it tells lapcli.cuda.early_start so, and every driver call here waits for it first.
The library itself never starts anything early.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..errors import SolverError
from .early_start import hooks as early_start

ALIGN = 256  # bytes between the buffers carved from one allocation (16 is what step 6's loads need)


def _driver():
    from cuda.bindings import driver

    return driver


def _check(result):
    """cuda.bindings returns (status, *values): raise on a failed status, else return the values."""
    status, *values = result
    if getattr(status, "value", status) != 0:
        driver = _driver()
        name = driver.cuGetErrorName(status)[1] if isinstance(status, driver.CUresult) else status
        raise SolverError(f"a CUDA driver call failed: {name.decode() if isinstance(name, bytes) else name}")
    return values[0] if len(values) == 1 else values


def device_count() -> int:
    """Visible CUDA devices, asked of the driver (initialising it; no context is created)."""
    early_start.wait()  # the lap command may be initialising the driver in a thread already
    driver = _driver()
    _check(driver.cuInit(0))
    return int(_check(driver.cuDeviceGetCount()))


def compute_capability(ordinal: int = 0) -> tuple[int, int]:
    """(major, minor) of a device, asked of the driver (no context is created)."""
    early_start.wait()
    driver = _driver()
    _check(driver.cuInit(0))
    handle = _check(driver.cuDeviceGet(ordinal))
    attribute = driver.CUdevice_attribute
    return (int(_check(driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle))),
            int(_check(driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle))))


class Gpu:
    """One device with its primary context (the one CuPy and the runtime API use too)."""

    def __init__(self, ordinal: int):
        early_start.wait()
        driver = _driver()
        _check(driver.cuInit(0))
        self.ordinal = ordinal
        self.handle = _check(driver.cuDeviceGet(ordinal))
        self.context = _check(driver.cuDevicePrimaryCtxRetain(self.handle))
        early_start.note_context(ordinal)
        attribute = driver.CUdevice_attribute
        read = lambda a: int(_check(driver.cuDeviceGetAttribute(a, self.handle)))  # noqa: E731
        self.sms = read(attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.max_shared = read(attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.arch = (read(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                     read(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        raw_name = _check(driver.cuDeviceGetName(256, self.handle))
        self.name = f"cuda:{ordinal} ({raw_name.split(bytes(1))[0].decode()})"
        self.kernels = {}  # a launcher's key -> {kernel name: CUfunction}

    def make_current(self) -> None:
        _check(_driver().cuCtxSetCurrent(self.context))

    def free_bytes(self) -> int:
        free, _total = _check(_driver().cuMemGetInfo())
        return int(free)

    def load(self, cubin: bytes, names: dict[str, str]) -> dict:
        """Load a cubin into this device's context; return {name: CUfunction} for ``names``
        (name -> lowered name)."""
        driver = _driver()
        module = _check(driver.cuModuleLoadData(cubin))
        return {name: _check(driver.cuModuleGetFunction(module, lowered.encode())) for name, lowered in names.items()}

    def resident_blocks(self, function, block_size: int, shared_bytes: int) -> int:
        return int(_check(_driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(function, block_size, shared_bytes)))


@lru_cache(maxsize=None)
def open_gpu(ordinal: int) -> Gpu:
    return Gpu(ordinal)


# ------------------------------------------------------------------------------- one solve
class DeviceArena:
    """One device allocation carved into the solve's buffers (fewer driver calls than one each)."""

    def __init__(self, sizes: dict[str, int]):
        self.offsets, total = {}, 0
        for name, nbytes in sizes.items():
            self.offsets[name] = total
            total += math.ceil(max(nbytes, 1) / ALIGN) * ALIGN
        self.nbytes = total
        self.base = _check(_driver().cuMemAlloc(total))

    def __getitem__(self, name: str) -> int:
        return int(self.base) + self.offsets[name]

    def free(self) -> None:
        _check(_driver().cuMemFree(self.base))


def kernel_arguments(*values) -> tuple[list[np.ndarray], np.ndarray]:
    """kernelParams for a launch: an array of addresses of the argument values (pointers as
    uint64, ints as int32). The value arrays must live until the launch returns."""
    holders = [np.array([v], dtype=np.uint64 if isinstance(v, PointerArg) else np.int32) for v in values]
    return holders, np.array([h.ctypes.data for h in holders], dtype=np.uint64)


class PointerArg(int):
    """A device address passed to a kernel (64 bits), as opposed to an int argument (32 bits)."""


def copy_out(address: int, dtype, count: int) -> np.ndarray:
    host = np.empty(count, dtype=dtype)
    if count:
        _check(_driver().cuMemcpyDtoH(host.ctypes.data, address, host.nbytes))
    return host


