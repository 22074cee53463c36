"""The file formats lapcli reads and writes: their extensions, NPY's magic bytes, the specs that
name one array inside a file (``FILE.h5:/group/data``, ``FILE.npz:name``), the order of a batch's
named arrays, the NPZ archive of a sparse matrix, which is not a batch of dense ones, and the array
types read as numbers."""

from __future__ import annotations

import os
import re

from ..errors import LapInputError

NPY_MAGIC = b"\x93NUMPY"
TEXT_SUFFIXES = (".csv", ".tsv", ".txt")
MATRIX_SUFFIXES = (".npy", ".npz", *TEXT_SUFFIXES, ".h5", ".hdf5")
ASSIGNMENT_SUFFIXES = (".csv", ".npy", ".json", ".npz")
DUALS_SUFFIXES = (".npz", ".json")
# The comment lapcli writes above a CSV matrix whose first row is 0,1,…,m−1: that row is data, not the
# column labels pandas writes by default (lapcli.io.text refuses such a line as ambiguous otherwise).
DATA_FOLLOWS = "# lapcli: the next line is data, not column labels"
HDF5_SUFFIXES = (".h5", ".hdf5")
# The attribute (name, value) of an HDF5 group that lapcli wrote as a batch of problems (io.write.members_bytes)
BATCH_MARK = ("lapcli", "batch")
SPARSE_FORMATS = ("csr", "csc", "coo", "bsr", "dia")  # what scipy.sparse.save_npz writes


# Binary formats by their first bytes, and what to do with one (None: the caller's advice); read as
# text, their bytes would fill a parse error
BINARY_MAGIC = ((NPY_MAGIC, "an NPY array", None), (b"PK\x03\x04", "an NPZ (zip) archive", None),
                (b"\x89HDF\r\n\x1a\n", "an HDF5 file", None),
                (b"\x1f\x8b", "gzip-compressed data", "decompress it first (zcat FILE | lap solve -)"),
                *((bom, "UTF-16 text (its byte-order mark)", "lapcli reads UTF-8: convert it first (iconv -f UTF-16 "
                   "-t UTF-8)") for bom in (b"\xff\xfe", b"\xfe\xff")))


def refuse_binary(data: bytes, name: str, advice: str) -> None:
    """LapInputError naming the binary format ``data`` starts with, where text is to be read (its
    own advice, or ``advice``); nothing for any other data."""
    for magic, kind, own_advice in BINARY_MAGIC:
        if data.startswith(magic):
            raise LapInputError(f"{name} holds {kind}; {own_advice or advice}")


def split_hdf5_path(spec: str) -> tuple[str, str | None]:
    """``FILE.h5:/group/data`` -> (``FILE.h5``, ``/group/data``), ``FILE.npz:name`` -> (``FILE.npz``,
    ``name``); other paths unchanged, and so is a path that exists (a file in a folder ``x.h5:y``)."""
    if os.path.exists(spec):
        return spec, None
    for suffix in (*HDF5_SUFFIXES, ".npz"):  # in any case, as the readers take FILE.H5 (not by lower():
        found = re.search(re.escape(suffix) + ":", spec, re.IGNORECASE)  # 'İ' lowers to two characters)
        if found:
            return spec[:found.end() - 1], spec[found.end():] or None
    return spec, None


def sparse_archive(archive, names: list[str]) -> bool:
    """Whether an NPZ archive is one scipy.sparse.save_npz wrote: its members data, shape and
    format, the last a 0-d string naming a sparse format (b'csr', 'coo', ...)."""
    if not {"format", "shape", "data"} <= set(names):
        return False
    try:
        form = archive["format"]
    except ValueError:  # not an NPY member: read (and refused) as the others are
        return False
    if form.ndim != 0 or form.dtype.kind not in "SU":
        return False
    value = form.item()
    return (value.decode("ascii", "replace") if isinstance(value, bytes) else value) in SPARSE_FORMATS


def numbers_only(array, where: str):
    """``array`` where it holds numbers lapcli reads (:func:`check_number_dtype`)."""
    check_number_dtype(array.dtype, where)
    return array


def is_number_dtype(dtype) -> bool:
    """Whether ``dtype`` is of numbers lapcli solves: bool, integers, reals up to float64."""
    return dtype.kind in "biu" or (dtype.kind == "f" and dtype.itemsize <= 8)


def check_number_dtype(dtype, where: str) -> None:
    """Bad input naming ``where`` unless ``dtype`` is of numbers lapcli solves (:func:`is_number_dtype`;
    NumPy's own words, "Cannot cast … 'safe'" for float128, named neither the file nor what to do)."""
    if is_number_dtype(dtype):
        return
    if dtype.kind not in "biuf":
        raise LapInputError(f"{where} has dtype {dtype}; lapcli reads numbers (bool, integers, reals)")
    raise LapInputError(f"{where} has dtype {dtype}, wider than float64, which lapcli solves floats in "
                        "(save it as float64, which rounds it)")


def check_text_name(path, name, group: str | None = None) -> None:
    """An HDF5 name is read as the UTF-8 text h5py gives; a name in another encoding comes as bytes,
    which the batch order, the search and the NPZ names written back would misread: refused, named."""
    if isinstance(name, bytes):
        where = f" in {group}" if group else ""
        raise LapInputError(f"{path} holds {name!r}{where}, a name that is not UTF-8 text; lapcli reads HDF5 "
                            "names as UTF-8: rename it, or name another dataset as FILE.h5:/NAME")


class Batch(list):
    """The matrices of a batch read from an NPZ or an HDF5 group, in :func:`batch_order`, and
    ``names``, what the file calls each: the answers are written under them."""

    def __init__(self, names, matrices):
        super().__init__(matrices)
        self.names = list(names)


def batch_order(names) -> list[str]:
    """The order of a batch's problems, for NPZ and HDF5 groups alike: numeric when every name is
    a number (``np.savez(**{"1": a, "0": b})`` lists "1" first), else as the file lists them."""
    names = list(names)
    numeric = all(name.isdecimal() for name in names)  # by length, then digits: no int() (4300 digits at most)
    return sorted(names, key=lambda name: (len(name.lstrip("0")), name.lstrip("0"))) if numeric else names
