"""The sum of an assignment's costs, the objective's one definition: exact for integers (int64, or
Python ints past it), correctly rounded for floats (math.fsum; float32 summed in float64 where that
is exact), so that objectives compare exactly with scipy's on the same pairs."""

from __future__ import annotations

import math

import numpy as np


def exact_sum(values: np.ndarray) -> np.ndarray:
    """Row sums of a (B, n) host array: int64 where they fit, else Python ints (an object array,
    as a list's member sums are); float32 in float64 where that is exact, else as float64 by fsum (a pairwise sum of 1e6 + U(0, 1e-7)
    costs errs past the tolerance the fuzzer holds us to; 1e30 + 1 − 1e30 in float32 summed to 0)."""
    if values.dtype.kind in "biu":
        widest = max(abs(int(values.min())), abs(int(values.max()))) if values.size else 0  # no np.abs: −2^63
        if values.dtype.itemsize < 8 or widest < 2**63 // max(values.shape[1], 1):
            return values.astype(np.int64).sum(axis=1)
        sums = [sum(row) for row in values.tolist()]  # Python ints: exact where int64 could overflow
        fits = all(-(2**63) <= total < 2**63 for total in sums)
        return np.array(sums, dtype=np.int64) if fits else np.array(sums or [], dtype=object)
    if values.dtype.itemsize <= 4:  # float64 sums of 24-bit values are exact within 2^29 of magnitude (÷ n)
        magnitudes = np.abs(values)  # no masked copy: a batch's objectives are summed on every call
        largest = float(magnitudes.max(initial=0.0))
        smallest = float(np.min(magnitudes, where=magnitudes > 0, initial=np.inf))
        values = values.astype(np.float64)
        if largest <= smallest * 2.0**29 / max(values.shape[1], 1):
            return values.sum(axis=1)
    return np.array([float_sum(row) for row in values.tolist()])


def float_sum(values: list[float]) -> float:
    """math.fsum (correctly rounded), which raises OverflowError where a partial sum passes
    float64's range even though the total may not (1e308 + 1.5e308 − 1e308): then the exact sum
    in integers, each value p/q with q a power of two, rounded once by int division (correctly
    rounded too; scaling the values down instead lost subnormal terms); an infinity where the total
    itself passes the range."""
    try:
        return math.fsum(values)
    except OverflowError:
        if not all(math.isfinite(x) for x in values):  # an infinity beside sums past the range: fsum's own answer
            return math.fsum(x for x in values if not math.isfinite(x))
        ratios = [float(x).as_integer_ratio() for x in values]
        denominator = max(q for _, q in ratios)  # powers of two: every q divides the largest
        numerator = sum(p * (denominator // q) for p, q in ratios)
        try:
            return numerator / denominator
        except OverflowError:
            return math.inf if numerator > 0 else -math.inf


def exact_total(values: np.ndarray) -> int | float:
    """:func:`exact_sum` of one 1-D host array, as a Python number (its floats without the (1, n)
    round trip: the CPU's ragged loop sums one member at a time)."""
    if values.dtype.kind == "f" and values.dtype.itemsize == 8:
        return float_sum(values.tolist())
    total = exact_sum(values[None])[0]
    return total.item() if isinstance(total, np.generic) else total
