"""The ``cuda`` engine's launcher through the CUDA driver API (NVIDIA's ``cuda.bindings``), no CuPy.

Why: a one-shot ``lap solve`` of a host matrix spent more on CuPy's import and set-up than on the
solve (H100 machine, n = 4096: ``import cupy`` 0.25 s, CUDA runtime initialisation and context
0.21 s, loading the cached kernels 0.10 s, against a 0.13 s kernel; docs/dispatch.md). Through the
driver API a process needs the driver's initialisation and the device's primary context and
nothing else: ``cuda.bindings.driver`` imports in ~20 ms, and the kernel is compiled once by
NVRTC, its cubin kept on disk (``cache_dir()``) and loaded in under a millisecond afterwards.

Same kernel (kernels/hungarian.cu), same State, statuses, step clocks, report and certificate as
the CuPy launcher (lapcli/engines/cuda_hungarian.py), which stays in charge of device (CuPy) inputs,
of host inputs that need preparing (floats, other integer types, k × m, maximising: it prepares
them on the device) and of host inputs above ``HOST_MAX_BYTES``, where its pinned staging ring
copies several times faster than the pageable copy used here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import gpu_start
from ..errors import SolverError
from .base import EngineResult, certified_result
from .cuda_hungarian import (
    AUCTION_ROUNDS, BLOCK_SIZE, BLOCKS_PER_SM, STATE_POINTERS, buffer_layout, check_device_memory, check_result,
    kernel_defines, kernel_name, kernel_source, launch_details, pack_state, plan_from_occupancy, step_stats,
    work_is_the_input,
)

# H100 machine, warm, int32 (docs/dispatch.md): the pageable copy here takes 0.5 / 9.2 / 37 ms at
# n = 1024 / 4096 / 8192 where CuPy's pinned ring took 0.7 / 4.1 / 10 ms (measured before
# lapcli.staging sent arrays up to 256 MB through its kept pinned buffer; not re-measured).
HOST_MAX_BYTES = 256 << 20  # n = 8192 int32: above, the ring saves more than CuPy's start-up costs
SMALL_BYTES = 16 << 20  # n = 2048 int32: below, the two copies cost about the same
KERNELS = ("hungarian", "row_min_slack")
ALIGN = 256  # bytes between the buffers carved from one allocation (16 is what step 6's loads need)


def usable(problem) -> bool:
    """This launcher serves ``problem`` by default: a host matrix that is its own work matrix
    (square int32, minimised: no preparation pass, which the CuPy launcher runs on the device),
    with cuda.bindings installed, and either CuPy not imported yet in this process (its import
    and set-up would cost more than any copy saves: a one-shot solve) or a matrix small enough
    (SMALL_BYTES) that the pageable copy costs no more than CuPy's ring. Asked explicitly
    (launcher="driver"), it solves any host input, preparing the work matrix on the host."""
    if problem.xp is not np or not work_is_the_input(problem) or problem.original.nbytes > HOST_MAX_BYTES:
        return False
    if "cupy" in sys.modules and problem.original.nbytes > SMALL_BYTES:
        return False
    return importlib.util.find_spec("cuda.bindings") is not None


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
    gpu_start.wait()  # the lap command may be initialising the driver in a thread already
    driver = _driver()
    _check(driver.cuInit(0))
    return int(_check(driver.cuDeviceGetCount()))


def compute_capability(ordinal: int = 0) -> tuple[int, int]:
    """(major, minor) of a device, asked of the driver (no context is created)."""
    gpu_start.wait()
    driver = _driver()
    _check(driver.cuInit(0))
    handle = _check(driver.cuDeviceGet(ordinal))
    attribute = driver.CUdevice_attribute
    return (int(_check(driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, handle))),
            int(_check(driver.cuDeviceGetAttribute(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, handle))))


class Gpu:
    """One device with its primary context (the one CuPy and the runtime API use too)."""

    def __init__(self, ordinal: int):
        gpu_start.wait()
        driver = _driver()
        _check(driver.cuInit(0))
        self.ordinal = ordinal
        self.handle = _check(driver.cuDeviceGet(ordinal))
        self.context = _check(driver.cuDevicePrimaryCtxRetain(self.handle))
        gpu_start.note_context(ordinal)
        attribute = driver.CUdevice_attribute
        read = lambda a: int(_check(driver.cuDeviceGetAttribute(a, self.handle)))  # noqa: E731
        self.sms = read(attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.max_shared = read(attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
        self.arch = (read(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                     read(attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        raw_name = _check(driver.cuDeviceGetName(256, self.handle))
        self.name = f"cuda:{ordinal} ({raw_name.split(bytes(1))[0].decode()})"
        self.kernels = {}  # (dtype, block size) -> {kernel name: CUfunction}

    def make_current(self) -> None:
        _check(_driver().cuCtxSetCurrent(self.context))

    def free_bytes(self) -> int:
        free, _total = _check(_driver().cuMemGetInfo())
        return int(free)

    def functions(self, dtype: str, block_size: int) -> tuple[dict, float]:
        """The kernels of one dtype, loaded from the cubin cache or compiled; (functions, compile ms)."""
        key = (dtype, block_size)
        if key in self.kernels:
            return self.kernels[key], 0.0
        start = time.perf_counter()
        driver = _driver()
        cubin, lowered = compiled_cubin(dtype, block_size, self.arch)
        try:
            module = _check(driver.cuModuleLoadData(cubin))
        except SolverError:  # a cached cubin from another CUDA version: compile it again
            cubin, lowered = compiled_cubin(dtype, block_size, self.arch, fresh=True)
            module = _check(driver.cuModuleLoadData(cubin))
        self.kernels[key] = {name: _check(driver.cuModuleGetFunction(module, lowered[name].encode())) for name in KERNELS}
        return self.kernels[key], (time.perf_counter() - start) * 1e3

    def resident_blocks(self, function, block_size: int, shared_bytes: int) -> int:
        return int(_check(_driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(function, block_size, shared_bytes)))


@lru_cache(maxsize=None)
def open_gpu(ordinal: int) -> Gpu:
    return Gpu(ordinal)


# ------------------------------------------------------------------------------- the cubin cache
def cache_dir() -> Path:
    """Where compiled kernels are kept: $LAPCLI_CACHE_DIR, else $XDG_CACHE_HOME/lapcli, else
    ~/.cache/lapcli."""
    if os.environ.get("LAPCLI_CACHE_DIR"):
        return Path(os.environ["LAPCLI_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lapcli"


def compile_options(block_size: int, arch: tuple[int, int]) -> list[str]:
    """NVRTC options: the launcher's defines, the device's architecture, C++17 and -ftz=true (as
    CuPy compiles the same source, so both launchers run the same code)."""
    return ["-std=c++17", "-ftz=true", f"--gpu-architecture=sm_{arch[0]}{arch[1]}", *kernel_defines(block_size)]


def cuda_include_dirs() -> list[str]:
    """Folders for NVRTC: one holding cooperative_groups.h, and one holding the CCCL header it
    includes (nv/target): the same folder in a CUDA toolkit, or its cccl/ subfolder, or the
    CCCL folder of the Python packages. A pip-installed include folder may lack CCCL, then the
    next candidate is tried."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:  # an older cuda-pathfinder
        find_nvidia_header_directory = None

    def packaged(name: str) -> list[str]:
        try:
            found = find_nvidia_header_directory(name) if find_nvidia_header_directory else None
        except Exception:  # not installed in this environment
            found = None
        return [found] if found else []

    roots = packaged("cudart") + [os.path.join(os.environ[v], "include") for v in ("CUDA_PATH", "CUDA_HOME")
                                  if os.environ.get(v)] + ["/usr/local/cuda/include"]
    for root in roots:
        if not os.path.isfile(os.path.join(root, "cooperative_groups.h")):
            continue
        for cccl in (root, os.path.join(root, "cccl"), *packaged("cccl")):
            if os.path.isfile(os.path.join(cccl, "nv", "target")):
                return [root] if cccl == root else [root, cccl]
    return []


def cached_cubin_paths(dtype: str, block_size: int, arch: tuple[int, int]) -> tuple[Path, Path, tuple]:
    """(cubin path, lowered-names path, what to compile) for one dtype. The key covers the source,
    the options and the names, not NVRTC's version: importing NVRTC to ask would cost a cold
    process ~50 ms, and a cubin that this driver cannot load is compiled again (Gpu.functions)."""
    source = kernel_source()
    options = compile_options(block_size, arch)
    names = {name: kernel_name(name, dtype) for name in KERNELS}
    key = hashlib.sha256(json.dumps([source, options, sorted(names.items())]).encode()).hexdigest()[:32]
    folder = cache_dir()
    return folder / f"hungarian-{key}.cubin", folder / f"hungarian-{key}.json", (source, options, names)


def compiled_cubin(dtype: str, block_size: int, arch: tuple[int, int], fresh: bool = False):
    """(cubin, lowered kernel names) for one dtype: from the cache unless ``fresh``, else compiled
    now and stored (a failed store only costs the next process a compile)."""
    cubin_path, names_path, (source, options, names) = cached_cubin_paths(dtype, block_size, arch)
    if not fresh:
        try:
            return cubin_path.read_bytes(), json.loads(names_path.read_text())
        except (OSError, ValueError):
            pass
    folder = cubin_path.parent
    cubin, lowered = nvrtc_compile(source, options, names)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path, data in ((names_path, json.dumps(lowered).encode()), (cubin_path, cubin)):
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_bytes(data)
            os.replace(temporary, path)  # whole or absent, also with several processes compiling
    except OSError:
        pass
    return cubin, lowered


def _nvrtc_check(result):
    status, *values = result
    if getattr(status, "value", status) != 0:
        raise SolverError(f"NVRTC failed: {status}")
    return values[0] if len(values) == 1 else values


def nvrtc_compile(source: str, options: list[str], names: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """Compile with NVRTC to a cubin for the options' architecture (the CUDA headers' folders
    added); return it with the lowered (mangled) name of each kernel."""
    from cuda.bindings import nvrtc

    options = [*options, *(f"-I{folder}" for folder in cuda_include_dirs())]
    program = _nvrtc_check(nvrtc.nvrtcCreateProgram(source.encode(), b"hungarian.cu", 0, [], []))
    try:
        for expression in names.values():
            _nvrtc_check(nvrtc.nvrtcAddNameExpression(program, expression.encode()))
        status = nvrtc.nvrtcCompileProgram(program, len(options), [o.encode() for o in options])[0]
        if getattr(status, "value", status) != 0:
            size = _nvrtc_check(nvrtc.nvrtcGetProgramLogSize(program))
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(program, log)
            raise SolverError(f"NVRTC could not compile the kernel: {log.decode(errors='replace').strip()[:2000]}")
        cubin = b" " * _nvrtc_check(nvrtc.nvrtcGetCUBINSize(program))
        _nvrtc_check(nvrtc.nvrtcGetCUBIN(program, cubin))
        lowered = {name: _nvrtc_check(nvrtc.nvrtcGetLoweredName(program, expression.encode())).decode()
                   for name, expression in names.items()}
        return cubin, lowered
    finally:
        nvrtc.nvrtcDestroyProgram(program)


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


def run(problem, *, timeout: float | None = None, device: int | None = None, block_size: int = BLOCK_SIZE,
        blocks_per_sm: int = BLOCKS_PER_SM, auction_rounds: int = AUCTION_ROUNDS) -> EngineResult:
    """Engine ``cuda`` for a host input: upload, one cooperative launch, the certificate's read
    pass on the device, the assignment and duals back."""
    driver = _driver()
    gpu = open_gpu(device if device is not None else 0)
    gpu.make_current()
    problem.check_entries_on(problem.original, np)  # NaN / infinities: the host holds the matrix
    work = problem.work_on(np)
    host = np.ascontiguousarray(work.values)
    size, dtype = host.shape[0], work.dtype
    functions, compile_ms = gpu.functions(dtype, block_size)
    plan = plan_from_occupancy(size, host.itemsize, block_size, blocks_per_sm, gpu.sms, gpu.max_shared,
                               lambda shared: gpu.resident_blocks(functions["hungarian"], block_size, shared))
    check_device_memory(plan.bytes_needed, gpu.free_bytes())
    layout = buffer_layout(size, plan, dtype)
    dual = layout["u"][0]
    sizes = {"cost": host.nbytes, **{name: kind.itemsize * count for name, (kind, count, _) in layout.items()},
             "state": 512, "row_min_slack": dual.itemsize * size}
    arena = DeviceArena(sizes)
    events = [_check(driver.cuEventCreate(0)) for _ in range(4)]
    try:
        _check(driver.cuMemsetD8(arena.base, 0, arena.nbytes))
        for name, (kind, count, fill) in layout.items():
            if fill == -1:
                _check(driver.cuMemsetD32(arena[name], 0xFFFFFFFF, count))
        state = pack_state({"cost": arena["cost"], **{name: arena[name] for name in STATE_POINTERS if name != "cost"}},
                           plan, size, dtype, work.eps, timeout, auction_rounds)
        state_host = np.frombuffer(state, dtype=np.uint8)
        _check(driver.cuMemcpyHtoD(arena["state"], state_host.ctypes.data, len(state)))
        _check(driver.cuEventRecord(events[0], 0))
        _check(driver.cuMemcpyHtoD(arena["cost"], host.ctypes.data, host.nbytes))
        _check(driver.cuEventRecord(events[1], 0))
        if plan.shared_bytes > 48 * 1024:
            _check(driver.cuFuncSetAttribute(
                functions["hungarian"], driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                plan.shared_bytes))
        holders, params = kernel_arguments(PointerArg(arena["state"]))
        _check(driver.cuLaunchCooperativeKernel(functions["hungarian"], plan.blocks, 1, 1, plan.block_size, 1, 1,
                                                plan.shared_bytes, 0, params.ctypes.data))
        _check(driver.cuEventRecord(events[2], 0))
        status_word = int(copy_out(arena["status"], np.int32, 1)[0])
        clocks_ns = copy_out(arena["step_ns"], np.uint64, 7)
        counts = copy_out(arena["step_count"], np.int32, 7)
        columns = copy_out(arena["column_of_star_at_row"], np.int32, size)
        u, v = copy_out(arena["u"], dual, size), copy_out(arena["v"], dual, size)
        _check(driver.cuEventRecord(events[3], 0))
        _check(driver.cuEventSynchronize(events[3]))
        elapsed = lambda a, b: float(_check(driver.cuEventElapsedTime(events[a], events[b])))  # noqa: E731
        details = launch_details(plan, compile_ms, launches=2, h2d_ms=elapsed(0, 1), kernel_ms=elapsed(1, 2),
                                 d2h_ms=elapsed(2, 3))
        details["launcher"] = "driver"
        details["auction_rounds"] = int(counts[0])
        details["driver_started_early"] = gpu_start.started_early()
        check_result(status_word, columns)
        # the certificate's read pass, on the device that holds the matrix (a block per row)
        holders, params = kernel_arguments(PointerArg(arena["cost"]), PointerArg(arena["u"]), PointerArg(arena["v"]),
                                           size, PointerArg(arena["row_min_slack"]))
        _check(driver.cuLaunchKernel(functions["row_min_slack"], min(size, 4 * gpu.sms), 1, 1, block_size, 1, 1, 0, 0,
                                     params.ctypes.data, 0))
        row_minima = copy_out(arena["row_min_slack"], dual, size)
    finally:
        for event in events:
            driver.cuEventDestroy(event)
        arena.free()
    return certified_result(problem, work, columns, u, v, engine="cuda", device=gpu.name,
                            steps=step_stats(counts, clocks_ns / 1e6), details=details, row_min_slack=row_minima)
