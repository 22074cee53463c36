"""Every entry that takes device inputs runs on the GPU they lie on. The CUDA engines launch on
CuPy's current device, and a CuPy array or CUDA tensor on another GPU would be read there through
a pointer of its own GPU (an illegal address, which spoils the process's CUDA context on a two-GPU
machine). ``device=`` naming another GPU than the inputs' is refused, as are inputs on two GPUs:
nothing is moved behind the caller's back."""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

import numpy as np

from .arrays import is_torch
from .errors import LapInputError
from .options import check_device


def gpu_of(costs: Any) -> int | None:
    """The GPU a device input lies on (a CuPy array, a CUDA torch tensor, or a list or tuple whose
    first matrix is one), else None."""
    if type(costs) is np.ndarray:  # the drop-in's usual input: one check
        return None
    first = costs[0] if isinstance(costs, (list, tuple)) and costs else costs
    cupy = sys.modules.get("cupy")  # imported wherever a CuPy array exists
    if cupy is not None and isinstance(first, cupy.ndarray):  # (cupyx's sparse matrices are refused later)
        return first.device.id
    if is_torch(first) and first.is_cuda:
        return first.device.index
    return None


def on_the_inputs_gpu(*names: str):
    """A decorator: the entry runs on the GPU its inputs (the parameters ``names``, by position or
    keyword) lie on, in CuPy's device context where that is not the current one. NumPy input costs
    one type check (the drop-in's call on a small matrix is a few microseconds)."""

    def decorate(entry):
        parameters = list(inspect.signature(entry).parameters)
        places = [(parameters.index(name), name) for name in names]

        (first_at, first_name), *more = places

        @functools.wraps(entry)
        def run(*args, **kwargs):
            gpu = gpu_of(args[first_at] if first_at < len(args) else kwargs.get(first_name))
            if gpu is None and not more:  # host input: one call and one type check more than the entry's own
                return entry(*args, **kwargs)
            inputs = [args[at] if at < len(args) else kwargs.get(name) for at, name in more]
            gpus = {found for found in (gpu, *map(gpu_of, inputs)) if found is not None}
            if not gpus:
                return entry(*args, **kwargs)
            if len(gpus) > 1:
                raise LapInputError(f"the inputs lie on GPUs {', '.join(map(str, sorted(gpus)))}: give them on one")
            gpu = gpus.pop()
            named = kwargs.get("device")
            if named is not None:
                check_device(named)  # a GPU number that exists here
                if named != gpu:
                    raise LapInputError(f"the costs lie on GPU {gpu} and device={named} names another: move them "
                                        f"there first (with cupy.cuda.Device({named}): cupy.asarray(costs)), or "
                                        "leave device out")
            import cupy

            if cupy.cuda.runtime.getDevice() == gpu:
                return entry(*args, **kwargs)
            with cupy.cuda.Device(gpu):
                return entry(*args, **kwargs)

        return run

    return decorate
