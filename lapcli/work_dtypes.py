"""The working dtypes a caller may ask for (``dtype=``, ``--dtype``), and what asking allows: floats
solved as integers only where every cost is one; integers solved as floats only where the float holds
every cost and its arithmetic every dual exactly, so that integers stay exact on every path (the
default keeps them in int32/int64: lapcli.work)."""

from __future__ import annotations

import numpy as np

from .errors import LapInputError

WORK_DTYPES = ("int32", "int64", "float32", "float64")


def requested_dtype(dtype) -> str | None:
    """A requested working dtype's name (a string, NumPy dtype or type), or None; anything else is bad input."""
    name = dtype if dtype is None or isinstance(dtype, str) else getattr(dtype, "name", getattr(dtype, "__name__", ""))
    if name is not None and name not in WORK_DTYPES:
        raise LapInputError(f"unknown working dtype {dtype!r}; choose one of {', '.join(WORK_DTYPES)}")
    return name


def floats_as_integers(arr, xp, requested: str, any_forbidden: bool):
    """Float costs solved as integers (``dtype="int64"``): only when every value is an integer."""
    if any_forbidden:
        raise LapInputError(f"forbidden (infinite) entries need a float working dtype, not {requested}")
    if arr.size and not bool((arr == xp.floor(arr)).all()):
        raise LapInputError(f"costs are not integers, so they cannot be solved as {requested}")
    if arr.size and float(xp.abs(arr).max()) >= 2.0**63:
        raise LapInputError(f"costs do not fit {requested}; ask for dtype float64")
    return arr.astype(np.int64)


def check_exact_in_float(arr, target: str) -> None:
    """Integers solved as floats (``dtype="float32"``): refuse values the float cannot hold."""
    if arr.size == 0:
        return
    digits = np.finfo(target).nmant + 1
    if arr.dtype.kind == "b" or arr.dtype.itemsize * 8 - (arr.dtype.kind == "i") <= digits:
        return  # every value of the integer dtype is exact in the float: no scan
    limit = 2 ** (digits - 1)  # the reductions form differences of two costs: they must be exact too
    if max(abs(int(arr.min())), abs(int(arr.max()))) > limit:
        advice = "ask for dtype int64 or float64" if target == "float32" else "leave the dtype to lapcli (exact int64)"
        raise LapInputError(f"integer costs beyond ±{limit} are not taken as {target} work, where a reduction's "
                            f"difference of two of them may not be exact; {advice}")


def check_integral_arithmetic(work, xp) -> None:
    """Integers solved as floats, asked for: exact while every dual and slack, within 4(k+1) times the
    costs' magnitude, is an integer float64 holds (2^53), so ties are told apart at eps < 1/2; else refused."""
    magnitude = float(xp.abs(work.values).max())
    if magnitude * 4 * (work.values.shape[2] + 1) >= 2.0**53:
        raise LapInputError(f"integer costs of magnitude {magnitude:.3g} are not solved exactly in float arithmetic at "
                            f"n={work.values.shape[2]}; leave the dtype to lapcli (exact int64)")
    work.integral = True


def work_dtype(dtype: np.dtype) -> np.dtype:
    """A ragged batch's work stack's dtype for members of ``dtype``: float32 or float64 as they are
    (float16 in float32), integers and booleans in int32 where they fit, else int64."""
    if dtype.kind == "f":
        return np.dtype(np.float64 if dtype.itemsize == 8 else np.float32)
    if dtype.kind == "b" or (dtype.kind in "iu" and dtype.itemsize < 4) or dtype == np.int32:
        return np.dtype(np.int32)
    return np.dtype(np.int64)
