"""The NumPy twin of kernels/auction_tiles.cu: the order in which the point auction puts its
columns (Morton's), the boxes of its tiles of TILE consecutive columns, and which tiles a row's
release pass reads (kernels/auction_release.cu). The CPU tests hold the rules here; the GPU tests
compare the kernels' order and boxes with them."""

from __future__ import annotations

import numpy as np

from ..cuda.auction_tiles import MORTON_BITS, TILE
from ..points import costs, minkowski_margin


def spatial_order(points: np.ndarray) -> np.ndarray:
    """The order of ``points`` (m, d) float64 along Morton's curve: each of the first
    min(d, MORTON_BITS) coordinates scaled to an integer of min(MORTON_BITS // used, 52) bits
    (2^bits − 1 exact in a float64) over the points' range ((x − least) / span · (2^bits − 1),
    span 1 where the range is one value), their bits interleaved (the highest first, coordinate
    0's first among them), the codes sorted stably (equal codes keep the caller's order)."""
    m, d = points.shape
    used = min(d, MORTON_BITS)
    bits = min(MORTON_BITS // used, 52)
    coordinates = points[:, :used]
    least = coordinates.min(axis=0)
    span = coordinates.max(axis=0) - least
    span = np.where(span > 0, span, 1.0)
    top = float((1 << bits) - 1)
    quantized = np.clip((coordinates - least) / span * top, 0.0, top).astype(np.uint64)
    code = np.zeros(m, dtype=np.uint64)
    for bit in range(bits - 1, -1, -1):
        for axis in range(used):
            code = (code << np.uint64(1)) | ((quantized[:, axis] >> np.uint64(bit)) & np.uint64(1))
    return np.argsort(code, kind="stable")


def tile_boxes(points: np.ndarray) -> np.ndarray:
    """Each tile's box of ``points`` (m, d) in their order: (ceil(m / TILE), 2d), a tile's least
    coordinates then its largest (a short last tile: of the points it has)."""
    m, d = points.shape
    tiles = -(-m // TILE)
    padded = np.concatenate([points, np.repeat(points[-1:], tiles * TILE - m, axis=0)])  # changes no box
    grouped = padded.reshape(tiles, TILE, d)
    return np.concatenate([grouped.min(axis=1), grouped.max(axis=1)], axis=1)


def tiles_read_in_release(point: np.ndarray, boxes: np.ndarray, tile_v: np.ndarray, own: float, metric: str,
                          p: float = 2.0) -> np.ndarray:
    """Which tiles (bool, one a tile) the release pass reads for a row at ``point`` (d,) whose own
    pair's reduced cost is ``own``: those whose bound, the metric from the point to the tile's box
    (0 inside it) less the tile's largest dual ``tile_v``, is at or below ``own`` (a NaN bound is
    read). The rule releases a row only for a column more than 2ε below ``own``, so the tiles left
    out cannot release it, and a released row's best column lies in a tile read. Cosine has no
    bound (every tile read)."""
    if metric == "cosine":
        return np.ones(len(boxes), dtype=bool)
    d = boxes.shape[1] // 2
    gap = np.maximum(np.maximum(boxes[:, :d] - point, point - boxes[:, d:]), 0.0)
    bound = costs(gap, np.zeros_like(gap), metric, p)
    if metric == "minkowski":  # pow may be off by an ulp or two, 1/p more below 1 (the kernels' box_bound)
        bound = bound - bound * minkowski_margin(p)
    return ~(bound - tile_v > own)
