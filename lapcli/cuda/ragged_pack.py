"""The launcher of kernels/ragged.cu: a ragged batch's members packed into one work stack on the
device, and the stack's answer unpacked to each member's rows, each in one launch from one table
(lapcli.ragged describes the layout; its NumPy pack and unpack are these kernels' twins).

Why kernels: the same gather and scatter written as CuPy array operations took ~0.9 and ~0.55 ms
of a matcher call at 8 × 100 × 20 (H100), a dozen launches and several host round trips each,
where the solve itself took 0.17 ms.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import numpy as np

from .runtime import Program, current_stream, load

THREADS = 256
# work dtype -> (C++ type, the forbidden value's slot letter, lapcli.cuda.runtime.SLOT_CODES)
WORK_TYPES = {"float32": ("float", "f"), "float64": ("double", "d"), "int32": ("int", "i"),
              "int64": ("long long", "q")}


@lru_cache(maxsize=None)
def program() -> Program:
    kernels_dir = resources.files("lapcli").joinpath("kernels")
    source = kernels_dir.joinpath("ragged_table.cuh").read_text() + "\n" + kernels_dir.joinpath("ragged.cu").read_text()
    kernels = [(f"pack_{work}", f"ragged_pack<{cxx}>", f"piii{slot}p") for work, (cxx, slot) in WORK_TYPES.items()]
    kernels += [("unpack", "ragged_unpack", "ppiiip"), ("pairs", "ragged_pairs", "ppipp")]
    return Program("ragged", source, (), tuple(kernels))


TABLE_FIELDS = 6  # kernels/ragged_table.cuh's fields of a member


def device_table(members, addresses: np.ndarray) -> tuple:
    """(the members' table of kernels/ragged_table.cuh, (byte address, row stride, rows, cols, first
    pair, first row) each, as one int64 device array; the pinned host block it is copied from
    asynchronously: keep it until the stream has passed the copy). Written straight into the
    pinned block: a matcher call's host work is the cost at small batches."""
    import cupy

    batch = len(members.rows)
    nbytes = 8 * TABLE_FIELDS * batch
    pinned = np.frombuffer(cupy.cuda.alloc_pinned_memory(max(nbytes, 8)), dtype=np.int64,
                           count=TABLE_FIELDS * batch).reshape(batch, TABLE_FIELDS)
    pinned[:, 0], pinned[:, 1], pinned[:, 2], pinned[:, 3] = addresses, members.strides, members.rows, members.cols
    pairs = np.minimum(members.rows, members.cols)
    for field, counts in ((4, pairs), (5, members.rows)):  # where each member's pairs and rows start
        np.cumsum(counts, out=pinned[:, field])
        pinned[:, field] -= counts
    device = cupy.empty(TABLE_FIELDS * batch, dtype=np.int64)
    cupy.cuda.runtime.memcpyAsync(device.data.ptr, pinned.ctypes.data, nbytes, 1, current_stream())  # 1: host to device
    return device, pinned


def grid(entries: int) -> int:
    return max(1, min(-(-entries // THREADS), 65536))


def pack(dtype, table, batch: int, rows: int, cols: int, forbidden):
    """(B, rows, cols) work stack of ``dtype`` (float32, float64, int32 or int64: the members' own)."""
    import cupy

    dtype = np.dtype(dtype)
    work = cupy.empty((batch, rows, cols), dtype=dtype)
    kernels, _ = load(program())
    kernels[f"pack_{dtype.name}"].launch(grid(work.size), THREADS,
                                         (table.data.ptr, batch, rows, cols, forbidden, work.data.ptr),
                                         stream=current_stream())
    return work


def unpack(col_of_row, table, width: int):
    """(B, width) int64: each member's column of each of its rows, −1 where none."""
    import cupy

    col_of_row = cupy.ascontiguousarray(col_of_row, dtype=np.int64)
    batch, rows = col_of_row.shape
    out = cupy.empty((batch, width), dtype=np.int64)
    stream = current_stream()
    cupy.cuda.runtime.memsetAsync(out.data.ptr, 0xFF, out.nbytes, stream)  # −1
    kernels, _ = load(program())
    kernels["unpack"].launch(grid(batch * rows), THREADS,
                             (col_of_row.data.ptr, table.data.ptr, batch, rows, width, out.data.ptr), stream=stream)
    return out


def pairs(out, table, total: int):
    """(2, ``total``) int64, rows then columns: every member's assigned rows in order and their
    columns, member after member."""
    import cupy

    batch, width = out.shape
    found = cupy.empty((2, total), dtype=np.int64)
    if batch and total:
        kernels, _ = load(program())
        kernels["pairs"].launch(batch, THREADS, (out.data.ptr, table.data.ptr, width, found[0].data.ptr,
                                                 found[1].data.ptr), stream=current_stream())
    return found
