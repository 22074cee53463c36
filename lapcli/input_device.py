"""Every entry runs on the GPU its input lies on: the CUDA engines launch on CuPy's current device,
and a CuPy array or CUDA tensor on another GPU was read there as a pointer of that device (an
illegal address that spoils the context on a two-GPU machine). ``device=`` naming another GPU than
the input's is refused: the input is not moved behind the caller's back."""

from __future__ import annotations

import functools
import sys
from typing import Any

from .arrays import is_torch
from .errors import LapInputError


def gpu_of(costs: Any) -> int | None:
    """The GPU a device input lies on (a CuPy array, a CUDA torch tensor, or a list or tuple whose
    first matrix is one), else None."""
    first = costs[0] if isinstance(costs, (list, tuple)) and costs else costs
    cupy = sys.modules.get("cupy")  # imported wherever a CuPy array exists
    if cupy is not None and isinstance(first, cupy.ndarray):  # (cupyx's sparse matrices are refused later)
        return first.device.id
    if is_torch(first) and first.is_cuda:
        return first.device.index
    return None


def on_the_input_s_gpu(entry):
    """``entry(costs, ...)`` run on the GPU ``costs`` lies on (CuPy's device context) where that is not
    the current one; ``device=`` (where the entry takes it) naming another is bad input."""

    @functools.wraps(entry)
    def run(costs, *args, **kwargs):
        gpu = gpu_of(costs)
        if gpu is None:
            return entry(costs, *args, **kwargs)
        named = kwargs.get("device")
        if named is not None and named != gpu and isinstance(named, int) and not isinstance(named, bool):
            raise LapInputError(f"the costs lie on GPU {gpu} and device={named} names another: move them there "
                                f"first (with cupy.cuda.Device({named}): cupy.asarray(costs)), or leave device out")
        import cupy

        if cupy.cuda.runtime.getDevice() == gpu:
            return entry(costs, *args, **kwargs)
        with cupy.cuda.Device(gpu):
            return entry(costs, *args, **kwargs)

    return run
