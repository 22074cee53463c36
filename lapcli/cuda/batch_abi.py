"""The ABI of kernels/batch_lap.cu, defined once: its C++ types per working dtype, the layouts
(columns per thread × threads per problem), the status codes, the certificate's per-problem stats
and summary slots (handed to every compile as -D defines: the kernel #errors without them), and
its parameter list. Pure Python: the launcher (lapcli.cuda.batch_lap) and the CPU tests use it.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

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
# 64 and more: a block per problem. Chosen by measurement on an H100 (docs/design.md):
# up to 16 columns half-warp groups (certified launch at 10000 x 16: 0.130 against 0.142 ms for a
# warp per problem, and 0.254 for a thread per problem; four columns per half-warp thread at 64
# columns took 0.47 against K2 x 32's 0.28); up to 1024 columns K4 x 256 since the branch-free step
# (cuda-sap's searches at n = 1024: 2.9 against 3.0 ms for K2 x 512, 3.5 for K1 x 1024; at 2048,
# K4 x 512 and K8 x 256 tie). These are the only instantiations the launcher compiles.
LAYOUTS = ((16, (1, 16)), (32, (1, 32)), (64, (2, 32)), (128, (4, 32)), (256, (2, 128)), (512, (4, 128)),
           (1024, (4, 256)), (2048, (4, 512)))
MAX_COLUMNS = LAYOUTS[-1][0]
# A ragged launch (a training step's images) seldom fills the GPU: with at most one member per
# multiprocessor each member's chain of dependent steps is the time, and its row-parallel passes
# (row reduction, staging, certificate) go faster on more threads, so members of 33 to 1024
# columns get one column a thread, the threads a power of two (the kernel's groups are).
# Up to two members per multiprocessor, two columns a thread. H100 kernel ms (DETR blocks, 300
# queries; widest the larger side) default → one a thread: 32 × 300 × 50 0.063 → 0.042, 64 × 300
# × 100 0.118 → 0.090, 16 × 900 × 100 0.122 → 0.108, 8 × 100 × 20 0.039 → 0.025, 128 × 100 × 30
# 0.066 → 0.045, 16 × 300 × 300 0.90 → 0.88; two a thread: 208 × 300 × 100 0.150 → 0.136,
# 200 × 100 × 100 0.374 → 0.303 (docs/design.md).
RAGGED_ONE_WAVE = ((64, (1, 64)), (128, (1, 128)), (256, (1, 256)), (512, (1, 512)), (1024, (1, 1024)))
RAGGED_TWO_A_MULTIPROCESSOR = ((128, (2, 64)), (256, (2, 128)), (512, (2, 256)), (1024, (2, 512)))

# ---- The kernel's ABI, defined HERE only: kernel_defines() hands the constants to every compile
# as -D options, and kernels/batch_lap.cu #errors without them.
STATUSES = {  # define -> (status code of a problem, message)
    "STATUS_OK": (0, ""),
    "STATUS_NO_COLUMN": (1, "no reachable column in a search (the costs hold NaN or inf)"),
    "STATUS_TIMEOUT": (2, "the batch kernel exceeded its time limit; the problem was abandoned"),
    "STATUS_PATH_CAP": (3, "a search or an augmenting walk exceeded its step bound (a bug, please report it)"),
}
STATUS_OK = STATUSES["STATUS_OK"][0]
STATUS_MESSAGES = {code: message for code, message in STATUSES.values() if code != STATUS_OK}
# A certified launch's per-problem statistics, stats[slot, b] (float64; certify_problem).
STATS = {"STAT_OBJECTIVE": 0, "STAT_MIN_SLACK": 1, "STAT_MAX_ASSIGNED_SLACK": 2, "STAT_TOLERANCE": 3,
         "STAT_PROVED": 4, "STAT_NONFINITE": 5}
# ... and its summary of the whole launch, summary[slot] (uint64): the launch stamp (the kernel's
# launch_start), problems not proved, problems with a non-finite cost, then the order-preserving
# keys (decode_key) of ~min slack, max assigned slack and max tolerance.
SUMMARY = {"SUMMARY_STAMP": 0, "SUMMARY_NOT_PROVED": 1, "SUMMARY_NONFINITE": 2, "SUMMARY_MIN_SLACK": 3,
           "SUMMARY_MAX_ASSIGNED_SLACK": 4, "SUMMARY_TOLERANCE": 5}
CERTIFY_STATS = len(STATS)
SUMMARY_SLOTS = len(SUMMARY)

# batch_lap's parameters in order, each (name, kind): "ptr" a device address, "i32" a 32-bit int,
# "u64" an unsigned 64-bit int. The launches pack their arguments from this (a test compares it
# with the kernel's parameter list).
KERNEL_PARAMETERS = (
    ("cost", "ptr"), ("B", "i32"), ("n_stack", "i32"), ("m_stack", "i32"),
    ("col_of_row", "ptr"), ("u_out", "ptr"), ("v_out", "ptr"), ("status", "ptr"),
    ("launch_start", "ptr"), ("time_limit_ns", "u64"),
    ("v_start", "ptr"), ("col_start", "ptr"),  # warm start (cuda-sap), null: none
    ("row_offset", "ptr"), ("transposed", "i32"), ("n_out", "i32"), ("exact", "i32"),  # CERTIFY only, from here
    ("out", "ptr"), ("stats", "ptr"), ("objective_out", "ptr"), ("summary", "ptr"),
    ("members", "ptr"), ("pair_rows", "ptr"), ("pair_cols", "ptr"), ("flat_out", "ptr"),  # RAGGED only
)
KERNEL_ARGUMENTS = len(KERNEL_PARAMETERS)
# The launch's signature (lapcli.cuda.runtime.SLOT_CODES): p a pointer, i an int, u an unsigned 64-bit int.
KERNEL_SIGNATURE = "".join({"ptr": "p", "i32": "i", "u64": "u"}[kind] for _, kind in KERNEL_PARAMETERS)
# The certify arguments (row_offset on) of a launch that does not certify: null pointers and zeros.
_CERTIFY_FROM = [name for name, _ in KERNEL_PARAMETERS].index("row_offset")
_NO_CERTIFY = (0,) * (KERNEL_ARGUMENTS - _CERTIFY_FROM)
_STAMP_OFFSET = 8 * SUMMARY["SUMMARY_STAMP"]  # a certified launch's launch_start: its summary's stamp slot


def certified_slots(batch: int, n_out: int) -> int:
    """int64 slots of a certified launch's results, laid out summary | objectives (B) | the caller's
    columns (B, n_out) | stats (CERTIFY_STATS, B) | status (B int32, in B slots)."""
    return SUMMARY_SLOTS + batch * (1 + n_out + CERTIFY_STATS + 1)


def certified_arguments(summary: int, batch: int, rows: int, cols: int, *, n_out: int, exact: bool, cost: int = 0,
                        time_limit_ns: int = 0, row_offset: int = 0, transposed: bool = False, members: int = 0,
                        pair_rows: int = 0, pair_cols: int = 0, flat_out: int = 0) -> tuple:
    """A certified launch's arguments in KERNEL_PARAMETERS' order, its results at ``summary`` (the
    device address of certified_slots' layout); no plain outputs and no warm start (0: null)."""
    objective = summary + 8 * SUMMARY_SLOTS
    columns = objective + 8 * batch
    stats = columns + 8 * batch * n_out
    # in KERNEL_PARAMETERS' order, written out (a small batch's call is ~0.06 ms of host work, and
    # this is on it; a test names each position)
    return (cost, batch, rows, cols, 0, 0, 0, stats + 8 * batch * CERTIFY_STATS, summary + _STAMP_OFFSET,
            time_limit_ns, 0, 0, row_offset, int(transposed), n_out, int(exact), columns, stats, objective,
            summary, members, pair_rows, pair_cols, flat_out)


def kernel_defines() -> tuple[str, ...]:
    """The -D options every compile of batch_lap.cu gets: the status codes and the certificate's slots."""
    return (*(f"-D{name}={code}" for name, (code, _) in STATUSES.items()),
            f"-DCERTIFY_STATS={CERTIFY_STATS}", *(f"-D{name}={slot}" for name, slot in STATS.items()),
            f"-DSUMMARY_SLOTS={SUMMARY_SLOTS}", *(f"-D{name}={slot}" for name, slot in SUMMARY.items()))


def fault_defines(fault: tuple[int, int] | None) -> tuple[str, ...]:
    """TESTS ONLY: ``fault`` = (problem, mode) compiles the kernel's one optional hook, which spoils
    that problem's answer before its certificate (mode 1: two rows' columns swapped, else one column
    given twice), so that tests can see the certificate refuse it."""
    if fault is None:
        return ()
    problem, mode = fault
    return (f"-DBATCH_CORRUPT_PROBLEM={int(problem)}", f"-DBATCH_CORRUPT_MODE={int(mode)}")


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


def ragged_layout(m: int, batch: int, sms: int) -> tuple[int, int]:
    """The layout of a ragged launch of ``batch`` members at most ``m`` columns wide (oriented)
    on a GPU of ``sms`` multiprocessors: RAGGED_ONE_WAVE's where every member has a multiprocessor
    to itself, RAGGED_TWO_A_MULTIPROCESSOR's where two share one, else choose_layout's."""
    if m > 32:
        table = RAGGED_ONE_WAVE if batch <= sms else RAGGED_TWO_A_MULTIPROCESSOR if batch <= 2 * sms else ()
        for limit, layout in table:
            if m <= limit:
                return layout
    return choose_layout(m)


def members_layout(m: int, batch: int, device: int | None = None) -> tuple[int, int]:
    """ragged_layout on ``device`` (default: CuPy's current one)."""
    import cupy

    from .driver import open_gpu

    return ragged_layout(m, batch, open_gpu(cupy.cuda.runtime.getDevice() if device is None else device).sms)


def all_layouts() -> set[tuple[int, int]]:
    """Every (K, THREADS) a launch may use: LAYOUTS' and the ragged launches'."""
    return {chosen for _, chosen in (*LAYOUTS, *RAGGED_ONE_WAVE, *RAGGED_TWO_A_MULTIPROCESSOR)}


def checked_layout(layout: tuple[int, int] | None, m: int) -> tuple[int, int]:
    """``layout`` (one of all_layouts()' (K, THREADS), holding m columns) or, for None,
    choose_layout(m)."""
    if layout is None:
        return choose_layout(m)
    layout = tuple(layout)
    if layout not in all_layouts():
        raise ValueError(f"layout {layout} is not one of the batch kernel's layouts "
                         f"{', '.join(str(chosen) for chosen in sorted(all_layouts()))}")
    k, threads = layout
    if m > k * threads:
        raise ValueError(f"layout {layout} holds {k * threads} columns, m = {m}")
    return layout


def kernel_source() -> str:
    """kernels/batch_lap.cu behind the ragged table it reads (kernels/ragged_table.cuh)."""
    kernels = resources.files("lapcli").joinpath("kernels")
    return kernels.joinpath("ragged_table.cuh").read_text() + "\n" + kernels.joinpath("batch_lap.cu").read_text()


def kernel_name(dtype: str, k: int, threads: int, certify: bool = False, ragged: bool = False) -> str:
    """The instantiation's name; ``ragged`` (certified only) reads a ragged batch's members in place."""
    cost_type, dual_type, _ = KERNEL_TYPES[dtype]
    flag = lambda on: "true" if on else "false"  # noqa: E731
    return f"batch_lap<{cost_type}, {dual_type}, {k}, {threads}, {flag(certify)}, {flag(ragged)}>"
