"""Array interop: NumPy, CuPy and torch tensors in, the same library and device out.

torch is not a dependency: a tensor is recognised by its type's module. CUDA tensors cross to
CuPy through DLPack (no copy), CPU tensors to NumPy through ``Tensor.numpy()`` (no copy); results
go back the same way (``torch.from_dlpack`` / ``torch.from_numpy``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Origin:
    """Where an input came from, so that outputs can go back there."""

    library: str  # "numpy", "cupy" or "torch"
    on_gpu: bool

    def to_caller(self, array):
        """``array`` (NumPy or CuPy) as the caller's kind of array, on the caller's device."""
        if self.library == "torch":
            import torch

            if self.on_gpu:
                return torch.from_dlpack(array)
            return torch.from_numpy(np.ascontiguousarray(host(array)))
        if self.library == "cupy":
            import cupy

            return cupy.asarray(array)
        return host(array)


def split_flat(flat, counts: np.ndarray) -> list:
    """``flat`` (NumPy, CuPy or torch, 1-D) cut into len(counts) consecutive views, one call for
    all of them (torch's split; a list of B slices costs B indexing calls)."""
    if is_torch(flat):
        return list(flat.split(counts.tolist()))
    xp = np if isinstance(flat, np.ndarray) else __import__("cupy")
    return xp.split(flat, np.cumsum(counts)[:-1].tolist())


def host(array) -> np.ndarray:
    """``array`` as a NumPy array: a CuPy array copied to the host, anything else as NumPy sees it."""
    return array.get() if hasattr(array, "get") and not isinstance(array, np.ndarray) else np.asarray(array)


def is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def is_cupy(x: Any) -> bool:
    return type(x).__module__.startswith("cupy")


def as_array(x: Any) -> tuple[Any, Origin]:
    """(NumPy or CuPy array, Origin) for NumPy/CuPy arrays, torch tensors and nested lists."""
    if is_torch(x):
        tensor = x.detach()
        if str(tensor.dtype) == "torch.bfloat16":  # neither NumPy nor CuPy has it; float32 holds it exactly
            tensor = tensor.float()
        if tensor.is_cuda:
            import cupy

            return cupy.from_dlpack(tensor), _TORCH_GPU
        return tensor.resolve_conj().resolve_neg().numpy(), _TORCH_CPU
    if is_cupy(x):
        return x, _CUPY
    return np.asarray(x), _NUMPY


_TORCH_GPU, _TORCH_CPU = Origin("torch", True), Origin("torch", False)
_CUPY, _NUMPY = Origin("cupy", True), Origin("numpy", False)
