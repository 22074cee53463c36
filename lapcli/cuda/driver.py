"""The CUDA driver API (NVIDIA's ``cuda.bindings``): the device count and compute capability
(``lap info``, ``auto``) and each device's primary context with the kernels loaded into it
(lapcli.cuda.runtime launches them).

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

from functools import lru_cache

from ..errors import SolverError
from .early_start import hooks as early_start


@lru_cache(maxsize=1)
def _driver():
    """cuda.bindings.driver, imported on first use (an import statement costs ~1 µs a call)."""
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


def _attributes(ordinal: int, *names: str) -> tuple[int, ...]:
    """A device's CU_DEVICE_ATTRIBUTE_<name> values, asked of the driver (no context is created)."""
    early_start.wait()
    driver = _driver()
    _check(driver.cuInit(0))
    handle = _check(driver.cuDeviceGet(ordinal))
    attribute = lambda name: getattr(driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")  # noqa: E731
    return tuple(int(_check(driver.cuDeviceGetAttribute(attribute(name), handle))) for name in names)


def compute_capability(ordinal: int = 0) -> tuple[int, int]:
    """(major, minor) of a device, asked of the driver (no context is created)."""
    return _attributes(ordinal, "COMPUTE_CAPABILITY_MAJOR", "COMPUTE_CAPABILITY_MINOR")


def max_shared_optin(ordinal: int = 0) -> int:
    """A block's opt-in shared memory on a device, in bytes, asked of the driver (no context is
    created, and CuPy is not imported: auto reads it before it knows whether CuPy will be needed)."""
    return _attributes(ordinal, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")[0]


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
        self.shared_per_sm = read(attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
        self.arch = (read(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                     read(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        raw_name = _check(driver.cuDeviceGetName(256, self.handle))
        self.name = f"cuda:{ordinal} ({raw_name.split(bytes(1))[0].decode()})"
        self.kernels = {}  # lapcli.cuda.runtime.Program -> its loaded kernels

    def make_current(self) -> None:
        _check(_driver().cuCtxSetCurrent(self.context))

    def free_bytes(self) -> int:
        free, _total = _check(_driver().cuMemGetInfo())
        return int(free)

    def load(self, cubin: bytes, names: dict[str, str]) -> dict:
        """Load a cubin into this device's context; return {name: CUfunction} for ``names``
        (name -> lowered name)."""
        driver = _driver()
        self.make_current()
        module = _check(driver.cuModuleLoadData(cubin))
        return {name: _check(driver.cuModuleGetFunction(module, lowered.encode())) for name, lowered in names.items()}



@lru_cache(maxsize=None)
def open_gpu(ordinal: int) -> Gpu:
    return Gpu(ordinal)
