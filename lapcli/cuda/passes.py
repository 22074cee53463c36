"""The launchers of kernels/passes.cu: streamed passes over any cost source of kernels/costs.cuh
(a dense work matrix, or two point sets whose costs are computed as they are read).

- :func:`row_min`: every row's minimum of c − v and its lowest column (the column reduction's start
  of a point problem, the auction's hand-over to the searches, the certificate's read pass);
- :func:`pair_costs`: c(i, col[i]), by the same code as the solving kernels' costs.

A program that holds them lists :func:`kernels` of its source type; the launchers take the loaded
kernels and the source's five arguments (first, second, stride, p, sign).
"""

from __future__ import annotations

import numpy as np

from .runtime import current_stream

FILE = "passes.cu"
THREADS = 256  # 8 warps a block, one row a warp (row_min); a row a thread (pair_costs)
SIGNATURE = "ppqddi"  # the source's five arguments and the row count


def kernels(source_type: str) -> tuple[tuple[str, str, str], ...]:
    """The (key, name expression, signature) of both passes on ``source_type``, for a Program."""
    return (("row_min", f"row_min<{source_type}>", SIGNATURE + "ippp"),
            ("pair_costs", f"pair_costs<{source_type}>", SIGNATURE + "pp"))


def row_min(kernel_set: dict, source: tuple, count: int, other: int, v=None):
    """(minimum over j < ``other`` of c(i, j) − v[j], the lowest j attaining it) for every row
    i < ``count`` of ``source``, as float64 and int32 CuPy arrays; v (float64 CuPy) None: 0."""
    import cupy

    minima = cupy.empty(count, dtype=np.float64)
    argmin = cupy.empty(count, dtype=np.int32)
    v_address = 0 if v is None else v.data.ptr
    blocks = max(1, -(-count // (THREADS // 32)))
    kernel_set["row_min"].launch(blocks, THREADS, (*source, count, other, v_address, minima.data.ptr,
                                                   argmin.data.ptr), stream=current_stream())
    return minima, argmin


def pair_costs(kernel_set: dict, source: tuple, count: int, col):
    """c(i, col[i]) for every row i < ``count`` of ``source`` (col: every row assigned), float64."""
    import cupy

    out = cupy.empty(count, dtype=np.float64)
    col = cupy.ascontiguousarray(col, dtype=np.int32)
    blocks = max(1, -(-count // THREADS))
    kernel_set["pair_costs"].launch(blocks, THREADS, (*source, count, col.data.ptr, out.data.ptr),
                                    stream=current_stream())
    return out
