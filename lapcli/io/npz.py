"""NPZ input: NumPy's zip archive of named arrays, read as one matrix or stack, or as a batch of
matrices (lapcli.io.formats.Batch). :func:`npz_rank` answers what :func:`read_npz` would give
from the members' NPY headers alone, so that the checks of inputs before any is solved decompress
no array (a compressed 4000 × 4000 float64 member: 0.75 ms to check, 0.77 s to read)."""

from __future__ import annotations

import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import LapInputError
from .formats import Batch, batch_order, check_number_dtype, numbers_only, sparse_archive
from .text import first_line

# NPY header readers by format version (NumPy's public ones); a member of another version is read whole
_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def read_npz(path: Path, name: str | None):
    """One array of an NPZ file (NumPy's archive of several): the one it holds, or ``name``
    (``FILE.npz:name``, or --dataset); or, when every array it holds is a matrix and none is
    named, all of them as a :class:`Batch`: a ragged batch (one array named "0" is a batch of one,
    as ``lap generate --ragged`` and the batch outputs name their arrays). A file that is no zip
    archive, one cut short or damaged, and a member that is not an NPY array are bad input."""
    with _archive(path) as archive:
        loaded = {}

        def member(key: str) -> np.ndarray:
            if key not in loaded:
                loaded[key] = _npz_member(path, archive, key)
            return loaded[key]

        chosen = _chosen(path, archive, name, lambda key: member(key).ndim)
        return Batch(chosen, [member(key) for key in chosen]) if isinstance(chosen, list) else member(chosen)


def npz_rank(path: Path, name: str | None) -> int:
    """The number of dimensions of what :func:`read_npz` gives (3 for a batch of matrices), from
    the members' headers: refused as read_npz refuses the archive, its names and its members'
    dtypes; a member's data cut short or damaged is found when the file is read."""
    with _archive(path) as archive:
        stored = set(archive.zip.namelist())  # once: a batch archive holds thousands of members

        def rank(key: str) -> int:
            return _member_rank(path, archive, key, stored)

        chosen = _chosen(path, archive, name, rank)
        return 3 if isinstance(chosen, list) else rank(chosen)


@contextmanager
def _archive(path: Path):
    """The open archive (np.load's NpzFile); its errors, and the zip's, as bad input naming ``path``."""
    try:
        with open(path, "rb") as handle:
            if handle.read(4) not in (b"PK\x03\x04", b"PK\x05\x06"):  # np.load would take an NPY or a pickle
                raise LapInputError(f"cannot read {path} as NPZ: it is not a zip archive (what np.savez writes)")
        with np.load(path, allow_pickle=False) as archive:
            yield archive
    except LapInputError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as error:
        message = first_line(error)
        if "pickle" in message.lower():
            message = "an array holds Python objects, not numbers"
        raise LapInputError(f"cannot read {path} as NPZ: {message}") from None


def _chosen(path: Path, archive, name: str | None, rank_of) -> list[str] | str:
    """The member names :func:`read_npz` reads: every one, in batch order, where none is named and
    each is a matrix (``rank_of(key)`` 2), else the one named or the only one."""
    names = list(archive.files)
    if name is None and sparse_archive(archive, names):
        raise LapInputError(f"{path} holds a scipy.sparse matrix (save_npz); lapcli reads dense costs: "
                            "save M.toarray() with forbidden pairs as inf (an absent entry reads as 0)")
    if name is None and (len(names) > 1 or names == ["0"]):  # "0": a batch of one, as lapcli writes it
        # (a 2-D "0" alone; NPZ has no attributes to mark it, unlike an HDF5 group)
        order = batch_order(names)
        if all([rank_of(key) == 2 for key in order]):  # each member read (or its header), as the read refuses any
            return order
    if name is None:
        if not names:
            raise LapInputError(f"{path} holds no arrays")
        if len(names) != 1:
            listed = ", ".join(names[:10]) + (", …" if len(names) > 10 else "")
            raise LapInputError(f"{path} holds {len(names)} arrays ({listed}); name one: {path}:NAME")
        name = names[0]
    if name not in names:
        raise LapInputError(f"{path} has no array {name!r}; it holds {', '.join(names[:10]) or 'none'}")
    return name


def _npz_member(path: Path, archive, name: str) -> np.ndarray:
    """Member ``name`` of an open NPZ archive; NumPy gives a member that is not ``.npy`` as its
    raw bytes, which no reader here takes for a matrix."""
    array = archive[name]
    if not isinstance(array, np.ndarray):
        raise LapInputError(f"cannot read {path} as NPZ: {name!r} is not a NumPy array (an .npy member)")
    return numbers_only(array, f"{path}:{name}")


def _member_rank(path: Path, archive, name: str, stored: set[str]) -> int:
    """Member ``name``'s number of dimensions from its NPY header (its dtype checked as
    :func:`_npz_member` checks it), without decompressing its data. ``stored``: the archive's
    member names."""
    member = name if name in stored else f"{name}.npy"  # as np.load finds it (".npy" dropped)
    with archive.zip.open(member) as stream:
        if stream.read(len(np.lib.format.MAGIC_PREFIX)) != np.lib.format.MAGIC_PREFIX:
            # np.load gives the member as its bytes
            raise LapInputError(f"cannot read {path} as NPZ: {name!r} is not a NumPy array (an .npy member)")
    with archive.zip.open(member) as stream:
        version = np.lib.format.read_magic(stream)  # past the prefix, np.load's errors are the read's
        read_header = _HEADER_READERS.get(version)
        if read_header is None:
            return _npz_member(path, archive, name).ndim
        shape, _, dtype = read_header(stream)
    if dtype.hasobject:
        raise LapInputError(f"cannot read {path} as NPZ: an array holds Python objects, not numbers")
    check_number_dtype(dtype, f"{path}:{name}")
    return len(shape)
