"""The file formats lapcli reads and writes: their extensions, NPY's magic bytes, and HDF5 specs
of the form ``FILE.h5:/group/data``."""

from __future__ import annotations

NPY_MAGIC = b"\x93NUMPY"
MATRIX_SUFFIXES = (".npy", ".csv", ".tsv", ".txt", ".h5", ".hdf5")
ASSIGNMENT_SUFFIXES = (".csv", ".npy", ".json")
DUALS_SUFFIXES = (".npz", ".json")
HDF5_SUFFIXES = (".h5", ".hdf5")


def split_hdf5_path(spec: str) -> tuple[str, str | None]:
    """``FILE.h5:/group/data`` -> (``FILE.h5``, ``/group/data``); other paths unchanged."""
    for suffix in HDF5_SUFFIXES:
        marker = suffix + ":"
        if marker in spec:
            head, _, tail = spec.partition(marker)
            return head + suffix, tail or None
    return spec, None
