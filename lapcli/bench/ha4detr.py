"""The ``ha4detr`` matcher peer: HA4DETR (github.com/linfeng93/HA4DETR), a CUDA extension for
PyTorch that solves DETR's batched 300 × N (N ≤ 300) assignments, one block per image, timed in the
matcher suite beside lapcli's forms on the same cost block.

Why: it is the GPU matcher DETR users reach for besides torch-linear-assignment, so the suite
should show it. Its code is not ours to ship: the user points ``LAPCLI_HA4DETR`` at a folder holding
the authors' ``hungarian_gpu_batch.py`` (a ``git archive`` of their repository). Importing it builds
the extension (torch.utils.cpp_extension.load_inline: nvcc and ninja, a minute or so on a fresh
machine). Its kernel's sizes are compile-time constants, so it takes cells of 300 queries and at most
300 targets an image; it reads a (B, 300, 300) float32 block padded with +inf and each image's
target count, as its demo passes them.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

ENV = "LAPCLI_HA4DETR"
SOURCE = "hungarian_gpu_batch.py"
ROWS = COLUMNS = 300  # its kernel's MAX_ROWS and MAX_COLS


def _source() -> Path:
    folder = os.environ.get(ENV)
    if not folder:
        raise RuntimeError(f"{ENV} names no folder holding HA4DETR's {SOURCE}")
    path = Path(folder, SOURCE)
    if not path.is_file():
        raise RuntimeError(f"{ENV}={folder} holds no {SOURCE}")
    return path


def available() -> tuple[bool, str]:
    """(True, why) when ``LAPCLI_HA4DETR`` names HA4DETR's source and torch sees a GPU, else False
    and why, one line. Nothing is built here: the first cell imports (and so builds) it."""
    try:
        _source()
        import torch
    except (RuntimeError, ImportError) as error:
        return False, str(error)
    if not torch.cuda.is_available():
        return False, "torch sees no CUDA device"
    return True, f"HA4DETR from {os.environ[ENV]}"


@functools.cache
def module():
    """HA4DETR's module, imported once from ``LAPCLI_HA4DETR`` (which builds its extension); what
    it prints on import goes to stderr, not into the suite's table."""
    path = _source()
    spec = importlib.util.spec_from_file_location("hungarian_gpu_batch", path)
    loaded = importlib.util.module_from_spec(spec)
    with contextlib.redirect_stdout(sys.stderr):
        spec.loader.exec_module(loaded)
    return loaded


def takes(queries: int, counts) -> bool:
    """Whether its kernel holds a cell: exactly ROWS queries, at most COLUMNS targets an image."""
    return queries == ROWS and max(counts, default=0) <= COLUMNS


def pairs_of(out: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per image (query indices, target indices) from its (B, 300, 2) int32 answer: row i holds
    (i, the target of query i) where query i has one, −1 in the second slot where not."""
    found = []
    for image in out:
        assigned = image[:, 1] >= 0
        found.append((image[assigned, 0].astype(np.int64), image[assigned, 1].astype(np.int64)))
    return found
