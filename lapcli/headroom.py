"""Headroom for scipy's float64 sums: costs within 4(k + 1)× of float64's largest value scaled by a
power of two, so that a shortest-path solver's sums of up to k differences of two costs cannot
overflow (scipy's did, and returned an assignment that was not optimal)."""

from __future__ import annotations

import math

import numpy as np


def headroom_scale(values, k: int) -> float:
    """1.0, or the power of two that brings 4(k + 1)·max|values| within float64's range: the sums of
    up to k differences of two costs that a shortest-path solver (scipy's) forms then cannot
    overflow. Scaling by it is exact but for subnormals, far below any tolerance; the optimal
    assignments are the same. (The duals' recovery reads the reduced work, whose costs are ≥ 0,
    unscaled.)"""
    return headroom_scale_of(largest_finite(values), k)


def largest_finite(values) -> float:
    """The largest finite |value| (0 where there is none): one min and one max, and a second scan
    only where they are not finite (forbidden entries, ±inf, or NaN)."""
    largest = max(-float(values.min()), float(values.max()))
    if math.isfinite(largest):
        return largest
    finite = values[np.isfinite(values)]
    return max(-float(finite.min()), float(finite.max())) if finite.size else 0.0


def headroom_scale_of(largest: float, k: int) -> float:
    """:func:`headroom_scale` of values whose largest magnitude is ``largest`` (not finite: 1.0)."""
    if not math.isfinite(largest) or largest == 0:
        return 1.0
    excess = math.frexp(largest)[1] + math.ceil(math.log2(4 * (k + 1))) - 1023
    return 1.0 if excess <= 0 else math.ldexp(1.0, -excess)


def with_headroom(values):
    """``values`` (a host float matrix, or a stack of them: one scale for all) scaled by
    :func:`headroom_scale` where its sums could overflow, else as it is: what scipy is given."""
    if values.dtype.kind != "f" or not values.size:
        return values
    scale = headroom_scale(values, min(values.shape[-2:]))
    return values if scale == 1.0 else values * scale
