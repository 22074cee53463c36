"""Many small LAPs in one launch: the launcher of kernels/batch_lap.cu.

``solve_stack(costs)`` solves every problem of a (B, n, m) CuPy stack (1 <= n <= m, minimise) with
the shortest augmenting path algorithm (scipy's, Crouse 2016), one thread group per problem, and
returns the assignment, the duals that certify it, and a status per problem. Validation, maximise,
forbidden entries, transposing tall problems and torch interop are the caller's (the public
``solve_batch`` / ``batch_linear_assignment``).

lapcli.twins.reference_stack is the NumPy twin of the kernel (same steps, same tie-breaks, same
duals): the readable specification, and what the CPU tests run.

Host stacks reach the device through lapcli.cuda.staging (pinned memory, copied by several threads).
"""

from __future__ import annotations

import struct
import threading
import time
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np

# working dtype -> (C++ cost type, C++ dual type, NumPy dual type)
KERNEL_TYPES = {
    "int32": ("int", "long long", np.int64),
    "int64": ("long long", "long long", np.int64),
    "float32": ("float", "double", np.float64),
    "float64": ("double", "double", np.float64),
}

# Layouts (K columns per thread, THREADS threads per problem), the first that holds m columns wins.
# THREADS 16: half a warp per problem, four problems per 64-thread block; 32: a warp, two per block;
# 64 and more: a block per problem. Chosen by measurement on an H100 (docs/batch-notes.md): up to
# 16 columns half-warp groups (certified launch at 10000 x 16: 0.130 against 0.142 ms for a warp
# per problem, and 0.254 for a thread per problem, tenth session); up to 1024 columns K4 x 256
# since the branch-free step (cuda-sap's searches at n = 1024: 2.9 against 3.0 ms for K2 x 512,
# 3.5 for K1 x 1024; at 2048, K4 x 512 and K8 x 256 tie).
LAYOUTS = ((16, (1, 16)), (32, (1, 32)), (64, (2, 32)), (128, (4, 32)), (256, (2, 128)), (512, (4, 128)),
           (1024, (4, 256)), (2048, (4, 512)))
MAX_COLUMNS = LAYOUTS[-1][0]
# Measured, not chosen: four columns per half-warp thread at 64 columns (0.47 against K2 x 32's
# 0.28 ms, tenth session). solve_stack(layout=...) still takes it; the tests compile and run it.
MEASURED_LAYOUTS = ((4, 16),)

STATUS_OK = 0
STATUS_MESSAGES = {
    1: "no reachable column in a search (the costs hold NaN or inf)",
    2: "the batch kernel exceeded its time limit; the problem was abandoned",
    3: "a search or an augmenting walk exceeded its step bound (a bug, please report it)",
}


@dataclass
class StackResult:
    """Per problem b: col_of_row[b, i] the column of row i (valid where status[b] == 0), duals
    u[b, i], v[b, j] (int64 for integer costs, float64 for float costs), status[b]."""

    col_of_row: Any
    u: Any
    v: Any
    status: Any
    kernel_ms: float
    details: dict = field(default_factory=dict)
    buffers: tuple = ()  # the two allocations the arrays above view (solve_stack), for to_host

    def to_host(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(col_of_row, u, v, status) on the host in two copies (waits for the launch)."""
        ints, duals = (buffer.get() for buffer in self.buffers)
        batch, n = self.col_of_row.shape
        return (ints[2 + batch:].reshape(batch, n), duals[:batch * n].reshape(batch, n),
                duals[batch * n:].reshape(batch, -1), ints[2:2 + batch])


@lru_cache(maxsize=None)
def dtype_name(dtype) -> str:
    """``dtype.name``, cached: NumPy computes the name in Python on every access (~2 us), and a
    small batch's call is ~0.1 ms of such host work around its kernel."""
    return np.dtype(dtype).name


def choose_layout(m: int) -> tuple[int, int]:
    for limit, layout in LAYOUTS:
        if m <= limit:
            return layout
    raise ValueError(f"the batch kernel handles m <= {MAX_COLUMNS} columns, not {m}")


def kernel_source() -> str:
    return resources.files("lapcli").joinpath("kernels/batch_lap.cu").read_text()


def kernel_name(dtype: str, k: int, threads: int, certify: bool = False) -> str:
    cost_type, dual_type, _ = KERNEL_TYPES[dtype]
    return f"batch_lap<{cost_type}, {dual_type}, {k}, {threads}, {'true' if certify else 'false'}>"


_kernels: dict[tuple, tuple] = {}  # (dtype, k, threads, defines, certify) -> (kernel, compile_ms)
_launchers: dict[tuple, Any] = {}  # (device, the _kernels key) -> driver_launcher(kernel) or None


def compiled_kernel(dtype: str, k: int, threads: int, defines: tuple = (), certify: bool = False):
    """Compile one instantiation once per process; return (kernel, compile_ms, fresh). ``defines``
    (e.g. ("BATCH_SHFL=1",)) exist for measurements; ``certify`` selects the launch that also
    proves each answer and writes the caller's columns (certified_stack)."""
    key = (dtype, k, threads, defines, certify)
    found = _kernels.get(key)
    if found is not None:
        return found[0], found[1], False
    import cupy

    start = time.perf_counter()
    name = kernel_name(dtype, k, threads, certify)
    module = cupy.RawModule(code=kernel_source(), options=("-std=c++17", *(f"-D{d}" for d in defines)),
                            name_expressions=[name])
    kernel = module.get_function(name)
    _kernels[key] = (kernel, (time.perf_counter() - start) * 1e3)
    return kernel, _kernels[key][1], True


def launch_shape(batch: int, threads: int) -> tuple[int, int]:
    """(grid, block): groups of `threads` < 64 share 64-thread blocks (kernel's Group::BLOCK), else
    a block of `threads` per problem."""
    if threads < 64:
        per_block = 64 // threads
        return -(-batch // per_block), 64
    return batch, threads


# The positions of the kernel's 32-bit int arguments (B, n, m; transposed, n_out, exact); the rest are 64-bit.
_INT_ARGUMENTS = frozenset((1, 2, 3, 13, 14, 15))
# The certify arguments of a launch that does not certify: null pointers and zeros.
_NO_CERTIFY = (np.uint64(0), np.int32(0), np.int32(0), np.int32(0), np.uint64(0), np.uint64(0), np.uint64(0),
               np.uint64(0))

_reused: dict[tuple, tuple] = {}  # (thread, device, role) -> CUDA events reused call after call

# The kernel's 20 arguments, each in an 8-byte slot (a 32-bit int in its slot's low half).
KERNEL_ARGUMENTS = 20
_SLOTS = struct.Struct(f"<{KERNEL_ARGUMENTS}Q")  # every argument as an unsigned 64-bit slot (none is negative)
_launch_slots = threading.local()


def driver_launcher(kernel):
    """A launch of ``kernel`` (a CuPy RawKernel) through the driver's cuLaunchKernel (cuda.bindings,
    which lapcli's CUDA extras install), or None where that is not at hand (then CuPy launches).

    Why: a certified launch is a small batch's largest fixed cost after the kernel itself. CuPy
    converts each of the 20 arguments on every call (~25 us on the H100 machine, against a 0.13 ms
    kernel at 10000 x 16); here they are written into one reused buffer of 8-byte slots whose
    addresses the driver reads."""
    try:
        from cuda.bindings import driver

        loaded = kernel.kernel  # CuPy's loaded function on this device (kept with the launch below)
        function = driver.CUfunction(loaded.ptr)
        status, _ = driver.cuFuncGetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, function)
        if status != driver.CUresult.CUDA_SUCCESS:  # cuda.bindings cannot drive this driver: CuPy launches
            return None
    except Exception:  # noqa: BLE001 - no cuda.bindings, or a CuPy without the handle: CuPy launches
        return None

    def launch(grid: int, block: int, stream: int, values: tuple) -> None:
        slots = getattr(_launch_slots, "slots", None)
        if slots is None:  # per thread: a launch reads its slots while the call runs
            slots = _launch_slots.slots = np.zeros(KERNEL_ARGUMENTS, dtype=np.uint64)
            _launch_slots.bytes = memoryview(slots).cast("B")
            _launch_slots.addresses = addresses = slots.ctypes.data + 8 * np.arange(KERNEL_ARGUMENTS, dtype=np.uint64)
            _launch_slots.pointer = addresses.ctypes.data  # the driver's void** kernelParams
        _SLOTS.pack_into(_launch_slots.bytes, 0, *values)  # 0.9 us; NumPy's slots[:] = values 1.8 (H100 machine)
        status, = driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, _launch_slots.pointer, 0)
        if status != driver.CUresult.CUDA_SUCCESS:
            from ..errors import SolverError

            raise SolverError(f"launching the batch kernel failed: {driver.cuGetErrorName(status)[1].decode()}")

    launch.function = loaded  # CuPy's function object, so that its module stays loaded while launch lives
    return launch


def reused_events(device: int, role: str, count: int) -> tuple:
    """``count`` timing events for one role (a launch, a batch call) on one device and thread:
    created once, so a call records instead of creating them."""
    import cupy

    key = (threading.get_ident(), device, role)
    if key not in _reused:
        _reused[key] = tuple(cupy.cuda.Event() for _ in range(count))
    return _reused[key]


def warm_start_pointers(warm_start, batch: int, n: int, m: int, dual) -> tuple:
    """The kernel's (v_start, col_start) arguments: device addresses, or two nulls."""
    if warm_start is None:
        return np.uint64(0), np.uint64(0)
    v, col_of_row = warm_start
    if n != m:
        raise ValueError(f"a warm start needs square problems, got n = {n}, m = {m}")
    if v.shape != (batch, m) or v.dtype != dual or not v.flags.c_contiguous:
        raise ValueError(f"warm-start v must be a C-contiguous ({batch}, {m}) {np.dtype(dual).name} array")
    if col_of_row.shape != (batch, n) or col_of_row.dtype != np.int32 or not col_of_row.flags.c_contiguous:
        raise ValueError(f"warm-start columns must be a C-contiguous ({batch}, {n}) int32 array")
    return np.uint64(v.data.ptr), np.uint64(col_of_row.data.ptr)


def solve_stack(costs, eps: float = 0.0, *, timeout: float | None = None, synchronize: bool = True,
                layout: tuple[int, int] | None = None, defines: tuple = (), warm_start=None) -> StackResult:
    """Solve costs[b] (shape (B, n, m), 1 <= n <= m, finite, C-contiguous CuPy array of int32,
    int64, float32 or float64) to MINIMISE, all B problems in one launch.

    Returns col_of_row (B, n) int32, u (B, n), v (B, m) (int64 for integer costs, float64 for
    floats), status (B,) int32 and kernel_ms (launch to completion, CUDA events; the call
    synchronises). Where status[b] == 0: c - u - v >= 0 on every pair and == 0 on the assigned
    ones, and for n < m v <= 0 and v == 0 on the columns no row took (a square problem starts from
    the column reduction, v = column minima); exactly for integer costs, within float64
    rounding (far below any sensible eps) for float costs. ``eps`` is accepted for the interface:
    the algorithm needs no tolerance. ``timeout`` (seconds) bounds the launch; problems still open
    then get status 2 (STATUS_MESSAGES). ``layout`` = (K, THREADS) overrides the choice and
    ``defines`` set the kernel's switches (both for measurements).

    ``warm_start`` = (v, col_of_row), CuPy arrays (B, m) of the dual dtype and (B, n) int32, -1 for
    a free row: square problems only (n == m), every assigned row tight at a minimum of c − v over
    its row (as the auction start of kernels/hungarian.cu leaves them; engine cuda-sap). Only the
    free rows are searched from; v ≤ 0 and v == 0 on free columns then need not hold.
    """
    import cupy

    if costs.ndim != 3:
        raise ValueError(f"costs must be a (B, n, m) stack, got shape {costs.shape}")
    batch, n, m = costs.shape
    dtype = costs.dtype.name
    if dtype not in KERNEL_TYPES:
        raise ValueError(f"unsupported dtype {dtype}; use one of {', '.join(KERNEL_TYPES)}")
    if batch and not 1 <= n <= m:
        raise ValueError(f"need 1 <= n <= m, got n = {n}, m = {m} (transpose tall problems)")
    dual = KERNEL_TYPES[dtype][2]
    # Two allocations: [launch stamp (2 ints), status (B), col_of_row (B n)] and [u (B n), v (B m)].
    ints = cupy.empty(2 + batch + batch * n, dtype=np.int32)
    duals = cupy.empty(batch * (n + m), dtype=dual)
    status = ints[2:2 + batch]
    col_of_row = ints[2 + batch:].reshape(batch, n)
    u = duals[:batch * n].reshape(batch, n)
    v = duals[batch * n:].reshape(batch, m)
    if batch == 0:
        return StackResult(col_of_row, u, v, status, 0.0, {"launches": 0}, (ints, duals))
    if not costs.flags.c_contiguous:
        costs = cupy.ascontiguousarray(costs)
    k, threads = layout if layout is not None else choose_layout(m)
    if m > threads * k:
        raise ValueError(f"layout {(k, threads)} holds {threads * k} columns, m = {m}")
    kernel, compile_ms, fresh = compiled_kernel(dtype, k, threads, defines)
    grid, block = launch_shape(batch, threads)
    warm = warm_start_pointers(warm_start, batch, n, m, dual)
    limit_ns = 0 if not timeout else min(int(timeout * 1e9), 2**64 - 1)
    stream = cupy.cuda.get_current_stream()
    device = cupy.cuda.runtime.getDevice()
    begin, end = reused_events(device, "launch", 2)
    cupy.cuda.runtime.memsetAsync(ints.data.ptr, 0, 8, stream.ptr)  # the launch stamp
    begin.record(stream)
    kernel((grid,), (block,), (costs, np.int32(batch), np.int32(n), np.int32(m), col_of_row, u, v,
                               status, ints, np.uint64(limit_ns), *warm, *_NO_CERTIFY))
    end.record(stream)
    details = {"layout": f"K={k} threads={threads}", "grid": grid, "block": block, "launches": 1,
               "compile_ms": round(compile_ms if fresh else 0.0, 3)}
    if not synchronize:  # the caller synchronises later and reads the time then (events in details)
        details["events"] = (begin, end)
        return StackResult(col_of_row, u, v, status, float("nan"), details, (ints, duals))
    end.synchronize()
    kernel_ms = cupy.cuda.get_elapsed_time(begin, end)
    details["kernel_ms"] = round(kernel_ms, 4)
    return StackResult(col_of_row, u, v, status, kernel_ms, details, (ints, duals))


CERTIFY_STATS = 6  # per problem: objective, min slack, max assigned slack, tol, proved, non-finite
SUMMARY_SLOTS = 6  # launch stamp, not proved, non-finite, ~key(min slack), key(max assigned), key(tol)


@dataclass
class CertifiedStack:
    """One certifying launch in flight (certified_stack). Its results lie in one int64 device
    buffer, summary | objectives | columns | stats | status; the views are made when asked for
    (each CuPy view costs microseconds, and a batch call that is proved needs only two)."""

    buffer: Any
    batch: int
    n_out: int
    events: tuple
    details: dict
    device: int = 0

    @property
    def summary(self):
        return self.buffer[:SUMMARY_SLOTS]

    @property
    def objective(self):
        """(B,) int64: the objective for integer costs, else the bits of a float64."""
        return self.buffer[SUMMARY_SLOTS:SUMMARY_SLOTS + self.batch]

    @property
    def col_ind(self):
        """(B, n_out) int64, the caller's columns."""
        at = SUMMARY_SLOTS + self.batch
        return self.buffer[at:at + self.batch * self.n_out].reshape(self.batch, self.n_out)

    @property
    def stats(self):
        """(CERTIFY_STATS, B) float64, per problem (kernel's certify_problem)."""
        at = SUMMARY_SLOTS + self.batch * (1 + self.n_out)
        return self.buffer[at:at + CERTIFY_STATS * self.batch].view(np.float64).reshape(CERTIFY_STATS, self.batch)

    @property
    def status(self):
        """(B,) int32, STATUS_MESSAGES."""
        at = SUMMARY_SLOTS + self.batch * (1 + self.n_out + CERTIFY_STATS)
        return self.buffer[at:].view(np.int32)[:self.batch]


def certified_stack(values, *, n_out: int, transposed: bool, row_offset=None,
                    timeout: float | None = None, defines: tuple = (),
                    layout: tuple[int, int] | None = None, launcher: str = "driver") -> CertifiedStack:
    """certified_launch, launched at once (a stack not C-contiguous is copied first)."""
    import cupy

    if not values.flags.c_contiguous:
        values = cupy.ascontiguousarray(values)
    return certified_launch(values, n_out=n_out, transposed=transposed, row_offset=row_offset, timeout=timeout,
                            defines=defines, layout=layout, launcher=launcher)()


def certified_launch(values, *, n_out: int, transposed: bool, row_offset=None,
                     timeout: float | None = None, defines: tuple = (),
                     layout: tuple[int, int] | None = None, launcher: str = "driver"):
    """Everything of certified_stack's launch but the launch: returns a function that launches and
    returns the CertifiedStack. A host stack's call prepares it while its upload is copied (the
    values' address is all it needs of them), then launches once the upload's DMAs are issued.

    Launch the kernel that solves every problem of the (B, r, c) work stack (r <= c, minimise)
    and, in the same launch, proves each answer optimal, sums its objective and writes the caller's
    columns (kernels/batch_lap.cu, certify_problem). Nothing is copied back and nothing waits:
    the caller reads ``summary`` (48 bytes) to learn whether every problem was proved. ``defines``
    set the kernel's switches (tests spoil an answer with BATCH_CORRUPT_PROBLEM / _MODE); ``layout``
    = (K, THREADS) overrides choose_layout (measurements); ``launcher`` "cupy" launches through
    CuPy even where the driver's launch is at hand (driver_launcher; tests, measurements).

    The launch is the whole call's fixed cost at small batches (a 10000 x 16 stack solves in
    ~0.12 ms on an H100), so it is kept lean: device pointers go to the kernel as integers (an
    array argument costs CuPy a descriptor each) and no view of the result buffer is made here."""
    import cupy

    batch, r, c = values.shape  # Python ints (CuPy)
    if not values.flags.c_contiguous:  # a copy here could run before a pending upload's DMAs
        raise ValueError("certified_launch needs a C-contiguous stack")
    k, threads = layout if layout is not None else choose_layout(c)
    if c > threads * k:
        raise ValueError(f"layout {(k, threads)} holds {threads * k} columns, c = {c}")
    dtype = dtype_name(values.dtype)
    kernel, compile_ms, fresh = compiled_kernel(dtype, k, threads, defines, certify=True)
    grid, block = launch_shape(batch, threads)
    buffer = cupy.empty(SUMMARY_SLOTS + batch * (1 + n_out + CERTIFY_STATS + 1), dtype=np.int64)
    base = buffer.data.ptr
    objective = base + 8 * SUMMARY_SLOTS
    columns = objective + 8 * batch
    stats = columns + 8 * batch * n_out
    status = stats + 8 * batch * CERTIFY_STATS
    stream = cupy.cuda.get_current_stream()
    device = cupy.cuda.runtime.getDevice()
    begin, end = reused_events(device, "launch", 2)
    cupy.cuda.runtime.memsetAsync(base, 0, SUMMARY_SLOTS * 8, stream.ptr)  # launch stamp, counters, keys
    limit_ns = 0 if not timeout else min(int(timeout * 1e9), 2**64 - 1)
    # the kernel's arguments in order (batch_lap.cu): no plain outputs and no warm start (0: null)
    arguments = (values.data.ptr, batch, r, c, 0, 0, 0, status, base, limit_ns, 0, 0,
                 row_offset.data.ptr if row_offset is not None else 0, int(transposed), n_out,
                 int(values.dtype.kind in "iu"), columns, stats, objective, base)
    launch = None
    if launcher == "driver":
        key = (device, dtype, k, threads, defines, True)
        if key not in _launchers:
            _launchers[key] = driver_launcher(kernel)
        launch = _launchers[key]
    details = {"layout": f"K={k} threads={threads}", "grid": grid, "block": block, "launches": 1,
               "launcher": "driver" if launch is not None else "cupy", "compile_ms": round(compile_ms if fresh else 0.0, 3)}

    def launched() -> CertifiedStack:
        begin.record(stream)
        if launch is not None:
            launch(grid, block, stream.ptr, arguments)
        else:
            kernel((grid,), (block,), tuple(np.int32(a) if i in _INT_ARGUMENTS else np.uint64(a)
                                            for i, a in enumerate(arguments)))
        end.record(stream)
        return CertifiedStack(buffer, batch, n_out, (begin, end), details, device)

    return launched


def decode_key(key: int) -> float:
    """The float64 value of DualTraits<double>::key (batch_lap.cu): an order-preserving map of the
    IEEE bits to unsigned 64 bits, so that the kernel can atomicMax them."""
    bits = key ^ (1 << 63) if key >> 63 else ~key & 0xFFFF_FFFF_FFFF_FFFF
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


@lru_cache(maxsize=None)
def device_label(ordinal: int) -> str:
    from .hungarian import device_name

    return device_name()


def copy_back(buffer, count: int) -> np.ndarray:
    """``buffer[:count]`` (int64, on the device) in a new host array, after the stream's work.

    The array is a block of CuPy's pinned memory pool, the DMA's own destination: no host copy
    after it, and no fresh pageable pages to fault in (H100 machine, 10000 x 16 host stack: the
    1.3 MB of columns took ~0.2 ms through CuPy's ``get``). The block returns to the pool when
    the caller drops the array, so repeated calls reuse it and no call's answer aliases another's.
    Blocks are a power of two of bytes: the pool reuses a free block only of the same size, so
    batches of varying sizes share a few sizes and the page-locked memory it keeps stays bounded
    (pinning a new block costs ~0.65 ms per MB). Arrays above PINNED_COPY_BACK_BYTES go through
    CuPy's ``get``."""
    import cupy

    if 8 * count > PINNED_COPY_BACK_BYTES:
        return buffer[:count].get()
    block = 1 << max(8 * count - 1, 1).bit_length()
    host = np.frombuffer(cupy.cuda.alloc_pinned_memory(block), dtype=np.int64, count=count)
    stream = cupy.cuda.get_current_stream()
    cupy.cuda.runtime.memcpyAsync(host.ctypes.data, buffer.data.ptr, 8 * count, 2, stream.ptr)  # 2: device to host
    stream.synchronize()
    return host


PINNED_COPY_BACK_BYTES = 16 << 20  # results (summary, objectives, host callers' columns) up to this size
