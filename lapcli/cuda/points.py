"""The device side of a point-set problem (lapcli.points): its coordinates on the GPU in the layouts
the kernels read, and the launches on a ``Points`` cost source (kernels/costs.cuh), which computes
each cost from the coordinates when it is read (no k × m matrix is stored):

- :func:`row_min`: kernels/passes.cu's streamed pass (lapcli.cuda.passes), every row's minimum of
  c − v and its lowest column: the column reduction's start (sides swapped, v = 0) and the
  certificate's read pass;
- :func:`pair_costs`: c(i, col[i]), by the same code as the searches' costs;
- :func:`search`: kernels/sap.cu's shortest augmenting paths over one thread-block cluster;
- the auction's kernels (kernels/auction.cu), which lapcli.cuda.auction launches, and its tiles'
  (kernels/auction_tiles.cu, lapcli.cuda.auction_tiles);
- :func:`search_lowered`: kernels/sap_rounds.cu's searches, many rows a round, on a
  ``LoweredPoints`` source, whose rows may each carry one lowered pair: the finish of an auction
  whose last phase left rows free.

One program per (metric, dimension): the dimension is a template parameter, so a row's point
lives in registers and its loops unroll.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from . import auction, auction_release, auction_tiles, passes, sap_cluster, sap_rounds
from .runtime import Program, load

METRIC_CODES = {"sqeuclidean": 0, "euclidean": 1, "cityblock": 2, "chebyshev": 3, "minkowski": 4, "cosine": 5}


# what solves: kernels/sap.cu's searches, kernels/auction.cu, or kernels/sap_rounds.cu's on lowered pairs
METHODS = ("search", "auction", "tail")


@lru_cache(maxsize=None)
def program(metric: str, dim: int, method: str = "search", cluster: int = sap_cluster.CLUSTER,
            threads: int = sap_cluster.THREADS) -> Program:
    """Both passes and the solving kernels of ``method`` (METHODS) on the Points source of
    (metric, dim), the searches' in clusters of ``cluster`` blocks of ``threads``; "tail": only
    kernels/sap_rounds.cu on the LoweredPoints source, in blocks of ``threads``. One program each,
    so a solve compiles only what it runs."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; use one of {', '.join(METHODS)}")
    source_type = f"Points<{METRIC_CODES[metric]}, {dim}>"
    if method == "search":
        return Program("points", sap_cluster.kernel_source() + "\n" + sap_cluster.kernel_text(passes.FILE),
                       sap_cluster.kernel_defines(threads=threads, cluster=cluster),
                       (("search", f"sap_cluster<{source_type}, double>", sap_cluster.SIGNATURE),
                        *passes.kernels(source_type)))
    if method == "tail":
        lowered = f"LoweredPoints<{METRIC_CODES[metric]}, {dim}>"
        return Program("points-rounds", sap_rounds.kernel_source(), sap_rounds.kernel_defines(threads),
                       (("search", sap_rounds.kernel_name(lowered), sap_rounds.SIGNATURE),))
    auction_text = (auction.kernel_source(), *(sap_cluster.kernel_text(name) for name in (auction_release.FILE,
                                                                                           auction_tiles.FILE)))
    return Program("points-auction", "\n".join(auction_text),
                   (*auction.kernel_defines(), *auction_release.kernel_defines(), *auction_tiles.kernel_defines()),
                   (*passes.kernels(source_type), *auction.kernels(source_type),
                    *auction_release.tiled_kernels(source_type), *auction_tiles.kernels()))


@dataclass
class DevicePoints:
    """A problem's two sides as float64 CuPy arrays: ``rows`` (k, d) and ``columns`` (m, d),
    k ≤ m, each also transposed (d, count) for coalesced reads of the scanned side."""

    rows: Any
    columns: Any
    rows_t: Any
    columns_t: Any
    metric: str
    p: float
    sign: float
    kernels: dict
    compile_ms: float

    @property
    def k(self) -> int:
        return int(self.rows.shape[0])

    @property
    def m(self) -> int:
        return int(self.columns.shape[0])

    def source(self, swapped: bool = False) -> tuple:
        """The Points source's arguments: rows scanned against columns, or (``swapped``) the
        columns against the rows."""
        if swapped:
            return (self.columns.data.ptr, self.rows_t.data.ptr, self.k, self.p, self.sign)
        return (self.rows.data.ptr, self.columns_t.data.ptr, self.m, self.p, self.sign)


def upload(problem, method: str = "search") -> DevicePoints:
    """The problem's work sides (lapcli.points.PointProblem.rows / columns) on the current device,
    with the kernels of ``method``."""
    import cupy

    rows, columns = (cupy.ascontiguousarray(cupy.asarray(side, dtype=np.float64))
                     for side in (problem.rows, problem.columns))
    kernels, compile_ms = load(program(problem.metric, problem.dim, method))
    return DevicePoints(rows, columns, cupy.ascontiguousarray(rows.T), cupy.ascontiguousarray(columns.T),
                        problem.metric, problem.p, problem.sign, kernels, compile_ms)


def row_min(points: DevicePoints, v=None, *, swapped: bool = False):
    """(minimum over j of c(i, j) − v[j], the lowest j attaining it) for every row i, as float64
    and int32 CuPy arrays; ``swapped``: for every column over the rows (v then is the rows')."""
    count, other = (points.m, points.k) if swapped else (points.k, points.m)
    return passes.row_min(points.kernels, points.source(swapped), count, other, v)


def pair_costs(points: DevicePoints, col):
    """c(i, col[i]) for every row (col: int32 CuPy, every row assigned), float64, signed."""
    return passes.pair_costs(points.kernels, points.source(), points.k, col)


def search(points: DevicePoints, v_start=None, col_start=None, *, timeout: float | None = None):
    """kernels/sap.cu on the points (lapcli.cuda.sap_cluster.launch): queued, not waited for."""
    return sap_cluster.launch(points.kernels["search"], points.source(), points.k, points.m, np.float64,
                              v_start, col_start, timeout=timeout, compile_ms=points.compile_ms)


def search_lowered(points: DevicePoints, records, v_start, col_start, threads: int, delta: float, *,
                   timeout: float | None = None):
    """kernels/sap_rounds.cu on the LoweredPoints source: ``records`` (k, d + 2) float64, each row's
    coordinates, the column of its lowered pair (−1: none) and that cost; a block of ``threads`` on
    every multiprocessor (lapcli.cuda.sap_rounds.max_columns), a round's width starting at
    ``delta``. Queued, not waited for."""
    kernels, compile_ms = load(program(points.metric, points.rows.shape[1], "tail", threads=threads))
    source = (records.data.ptr, points.columns_t.data.ptr, points.m, points.p, points.sign)
    return sap_rounds.launch(kernels["search"], source, points.k, points.m, v_start, col_start, delta,
                             threads=threads, timeout=timeout, compile_ms=compile_ms)
