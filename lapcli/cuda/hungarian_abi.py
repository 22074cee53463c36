"""The ABI of kernels/hungarian.cu, defined once: its C++ types per working dtype, the flag slots
and status words (handed to every compile as -D defines: the kernel #errors without them), the
State struct it reads (pointers, then scalars), and the launch plan (grid, zero segments, shared
memory) computed from a device's numbers. Pure Python: the launcher (lapcli.cuda.hungarian) and
the CPU tests use it.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..errors import SolverError
from ..steps import AUCTION_PATIENCE, AUCTION_ROUNDS

BLOCK_SIZE = 512
BLOCKS_PER_SM = 1  # one resident block per SM: the cheapest grid.sync() (docs/design.md: grid.sync() costs 1.2 us at one block per SM, 2.3 us at eight)
ZERO_BITS = 32  # a zero is packed in 32 bits: (local_row << column_bits) | column
# Up to this n the grid has one block per two SMs: the matrix sits in L2, the solve is a chain of
# grid.sync()s, and a barrier over half the blocks is cheaper (a step-4 round 4.7 -> 4.0 us). Kernel
# 5-11 % faster at n = 1024 and 2048 on the H200 (auction start; 7-12 % on the H100 before it); at
# n = 4096 every smaller grid was slower (docs/benchmarks.md).
HALF_GRID_UP_TO = 2048

# working dtype -> (C++ cost type, C++ dual type, NumPy dual type, struct code of the dual)
KERNEL_TYPES = {
    "int32": ("int", "long long", np.int64, "q"),
    "int64": ("long long", "long long", np.int64, "q"),
    "float32": ("float", "double", np.float64, "d"),
    "float64": ("double", "double", np.float64, "d"),
}
STEPWISE_KERNELS = ("step_1_rows", "step_1_columns", "step_1_zeros", "step_1_auction_columns", "step_1_bid",
                    "step_1_claim", "step_1_win", "step_1_auction_zeros", "step_2_pick", "step_2_star", "step_3",
                    "step_4", "step_5a", "step_5b", "step_6_min", "step_6_shift")
EPOCH_KERNELS = ("step_1_bid", "step_2_pick", "step_3", "step_4")  # stepwise kernels that take the flag slot's epoch
SHARED_KERNELS = ("hungarian", "step_2_pick", "step_4")  # kernels that use the row_choice shared array
# What the kernel and this launcher share, defined HERE only: every compile passes them to the
# kernel as -D defines (kernel_defines), and the kernel refuses to compile without them.
# Flag slots: what a phase's threads report, read by every thread after the barrier.
SLOTS = {
    "SLOT_CHANGED": 0,  # step 2: a row picked a free zero (a star follows) / step 4: a row was covered
    "SLOT_PATH": 1,  # step 4: a primed zero in a row without a star (go to step 5)
    "SLOT_ABORT": 2,  # step 4: timeout or iteration cap (the value is the status)
    "SLOT_STARS": 3,  # step 3: number of starred columns / step 1 by auction: number of free rows
    "SLOT_INTS": 4,  # ints per slot
    "SLOT_COUNT": 3,  # rotating slots: one is cleared two phases after it was last read
}
STATUSES = {  # status word -> (define, message)
    0: ("STATUS_OK", ""),
    1: ("STATUS_DELTA_NOT_POSITIVE",
        "step 6 found a non-positive Δ (the zero list is inconsistent; a bug, please report it)"),
    2: ("STATUS_TIMEOUT", "the CUDA solver exceeded its time limit"),
    3: ("STATUS_ITERATION_CAP", "the CUDA solver reached its iteration cap (a bug, please report it)"),
    4: ("STATUS_PATH_WALK", "a step-5 path walk in the CUDA solver met an inconsistent path (a bug, please report it)"),
}
STATUS_MESSAGES = {code: message for code, (_, message) in STATUSES.items() if code}
SLOT_CHANGED, SLOT_PATH, SLOT_ABORT, SLOT_STARS, SLOT_INTS, SLOT_COUNT = SLOTS.values()


def kernel_defines(block_size: int = BLOCK_SIZE) -> tuple[str, ...]:
    """The -D options every compile of hungarian.cu gets: block size, slots, statuses."""
    return (f"-DLAP_BLOCK={block_size}", *(f"-D{name}={value}" for name, value in SLOTS.items()),
            *(f"-D{name}={code}" for code, (name, _) in STATUSES.items()))

# struct State<T, D> of the kernel: 25 pointers, then the scalars (packed by DeviceState in this order).
STATE_SCALARS = ("segment_capacity", "eps", "k", "column_bits", "time_limit_ns", "max_rounds", "auction_rounds",
                 "auction_patience", "start_only")
STATE_POINTERS = ("cost", "u", "v", "v_masked", "row_min", "partial", "new_cols", "incremental", "zeros", "zeros_size", "cover_row",
                  "cover_col", "column_of_star_at_row", "row_of_star_at_column", "column_of_prime_at_row",
                  "row_of_green_at_column", "column_claim", "uncovered_round", "slots", "step_ns", "step_count",
                  "status", "bid_of_column", "bid_of_row", "bid_column_of_row")


def kernel_source() -> str:
    return resources.files("lapcli").joinpath("kernels/hungarian.cu").read_text()


def kernel_name(function: str, dtype: str) -> str:
    cost_type, dual_type, _, _ = KERNEL_TYPES[dtype]
    return f"{function}<{cost_type}, {dual_type}>"

@dataclass
class LaunchPlan:
    blocks: int
    block_size: int
    segment_capacity: int
    bytes_needed: int
    column_bits: int
    shared_bytes: int  # dynamic shared memory per block: row_choice, one int per row of the block


def column_bits(size: int) -> int:
    """Bits of a packed zero's column: enough for columns 0 .. size − 1."""
    return max(1, (size - 1).bit_length())


def check_zero_packing(size: int, blocks: int) -> None:
    """A zero is (local_row << column_bits) | column in 32 bits: the local rows of a block
    (ceil(size / blocks)) must fit the bits the columns leave. k = 131,072 on 132 blocks needs
    17 + 10 bits; only a GPU with very few SMs and a huge k runs out."""
    rows = math.ceil(size / blocks)
    if (rows - 1).bit_length() + column_bits(size) > ZERO_BITS:
        raise SolverError(f"the CUDA solver cannot index n = {size} on {blocks} blocks "
                          f"({rows} rows per block); use --solver scipy")


def row_choice_bytes(size: int, blocks: int) -> int:
    """Shared memory of the kernel's row_choice array: one int per row a block owns."""
    return 4 * math.ceil(size / blocks)

def plan_from_occupancy(size: int, cost_itemsize: int, block_size: int, blocks_per_sm: int, sms: int,
                        max_shared: int, resident_blocks) -> LaunchPlan:
    """The plan from the device's numbers; ``resident_blocks(shared_bytes)`` asks the occupancy
    calculator (CuPy's or the driver's) how many blocks an SM holds."""
    widest = row_choice_bytes(size, min(sms, size))  # the most a block of a one-per-SM grid needs
    if widest > max_shared - 4096:
        raise SolverError(f"the CUDA solver cannot hold n = {size} rows on {sms} multiprocessors; use --solver scipy")
    resident = resident_blocks(widest)
    if resident < 1:
        raise SolverError(f"the kernel cannot be resident with {block_size} threads per block")
    blocks = max(1, min(sms * min(resident, blocks_per_sm), size))
    if size <= HALF_GRID_UP_TO:
        blocks = max(1, min(blocks, sms // 2))
    check_zero_packing(size, blocks)
    segment_capacity = math.ceil(size / blocks) * size
    return LaunchPlan(blocks, block_size, segment_capacity, launch_bytes(size, cost_itemsize, blocks),
                      column_bits(size), row_choice_bytes(size, blocks))

def launch_bytes(size: int, cost_itemsize: int, blocks: int) -> int:
    """Device bytes of one solve: the matrix, the zero segments, step 1's per-block column minima
    and the per-row/column arrays."""
    segment_capacity = math.ceil(size / blocks) * size
    return (
        size * size * cost_itemsize  # cost
        + blocks * segment_capacity * 4  # zero segments (a zero is 4 bytes)
        + blocks * size * 8  # step-1 column minima per block
        + size * (6 * 8 + 10 * 4)  # u, v, v_masked, row_min, auction bids (2); covers, stars, primes, greens,
        # new_cols, claims, rounds, the auction's bid columns
    )

@dataclass(frozen=True)
class ArenaLayout:
    """Where DeviceState's buffers lie in its one allocation: the zero-filled ones in
    [0, zeros_end), the -1-filled ones in [zeros_end, minus_ones_end), the rest after."""

    buffers: dict  # name -> (dtype, elements, fill), in allocation order
    offsets: dict  # name -> byte offset, a multiple of 256 (as cudaMalloc aligns)
    zeros_end: int
    minus_ones_end: int
    total: int


def plan_arena(layout: dict) -> ArenaLayout:
    """Order ``layout`` (buffer_layout's) by fill and give each buffer a 256-byte aligned offset.
    A -1 fill is written as bytes 0xFF, which is -1 only for signed integers: others are refused."""
    order = {0: 0, -1: 1, None: 2}
    ordered = dict(sorted(layout.items(), key=lambda item: order[item[1][2]]))
    offsets, total, ends = {}, 0, {0: 0}
    for name, (kind, count, fill) in ordered.items():
        if fill == -1 and np.dtype(kind).kind != "i":
            raise ValueError(f"buffer {name!r} is filled with -1 but is {np.dtype(kind).name}, not a signed integer")
        offsets[name] = total
        total += -(-max(count, 1) * np.dtype(kind).itemsize // 256) * 256
        ends[fill] = total
    return ArenaLayout(ordered, offsets, ends[0], ends.get(-1, ends[0]), total)


def buffer_layout(size: int, plan: LaunchPlan, dtype: str) -> dict[str, tuple[np.dtype, int, int | None]]:
    """Every device buffer of a solve but the costs: name -> (dtype, elements, fill), where fill
    is 0, -1 or None (left as allocated: written by the kernel before it is read)."""
    dual = np.dtype(KERNEL_TYPES[dtype][2])
    i32 = np.dtype(np.int32)
    return {
        "u": (dual, size, None), "v": (dual, size, None), "v_masked": (dual, size, None),
        "row_min": (dual, size, None), "partial": (dual, plan.blocks * size, None),
        "new_cols": (i32, size, None), "incremental": (i32, 2, 0),
        "zeros": (np.dtype(np.uint32), plan.blocks * plan.segment_capacity, None),
        "zeros_size": (i32, plan.blocks, 0), "cover_row": (i32, size, 0), "cover_col": (i32, size, 0),
        "column_of_star_at_row": (i32, size, -1), "row_of_star_at_column": (i32, size, -1),
        "column_of_prime_at_row": (i32, size, -1), "row_of_green_at_column": (i32, size, -1),
        "column_claim": (i32, size, None), "uncovered_round": (i32, size, None),  # set by steps 1 and 3
        "slots": (i32, SLOT_INTS * SLOT_COUNT, 0), "step_ns": (np.dtype(np.uint64), 7, 0),
        "step_count": (i32, 7, 0), "status": (i32, 1, 0),
        "bid_of_column": (np.dtype(np.uint64), size, 0), "bid_of_row": (dual, size, None),
        "bid_column_of_row": (i32, size, None),
    }


def pack_state(pointers: dict[str, int], plan: LaunchPlan, size: int, dtype: str, eps: float,
               timeout: float | None, auction_rounds: int = AUCTION_ROUNDS, start_only: bool = False,
               auction_patience: int = AUCTION_PATIENCE) -> bytes:
    """The bytes of struct State<T, D>: the buffers' device addresses, then the scalars.
    ``auction_rounds`` caps step 1's auction (0: the classical step 1; the twin's AUCTION_ROUNDS
    by default, so that the kernel and the twin take the same steps). ``start_only``: the kernel
    returns after step 1 (v and the stars are engine cuda-sap's warm start); ``auction_patience``
    its stopping rule's rounds without fewer free rows (the twin's AUCTION_PATIENCE by default)."""
    _, _, dual_dtype, dual_code = KERNEL_TYPES[dtype]
    time_limit_ns = min(int((timeout if timeout else 1e9) * 1e9), 2**63)
    max_rounds = min(4 * size**3 + 1000, 2**62)
    return struct.pack(
        f"<{len(STATE_POINTERS)}Qq{dual_code}iiQqiii",
        *(pointers[name] for name in STATE_POINTERS),
        plan.segment_capacity, dual_dtype(eps).item(), size, plan.column_bits, time_limit_ns, max_rounds,
        auction_rounds, auction_patience, int(start_only),
    )
