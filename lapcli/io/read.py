"""Read a cost matrix, or a stack of them, from the input named on the command line.

``.npy`` (memory-mapped: nothing is loaded until a solver reads it), ``.csv``/``.tsv``/``.txt``
(parsed by :mod:`lapcli.io.text`), ``.h5``/``.hdf5`` (``--dataset NAME`` or ``FILE.h5:/path``;
a contiguous dataset is memory-mapped too), and ``-`` for stdin (NPY by its magic bytes, else
text). NPY and HDF5 may also hold a stack of matrices (3-D, batch first); :func:`input_rank` tells
which without loading the data.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import sys
from pathlib import Path

import numpy as np

from ..errors import LapInputError
from .formats import (BATCH_MARK, HDF5_SUFFIXES, MATRIX_SUFFIXES, NPY_MAGIC, TEXT_SUFFIXES, Batch, batch_order,
                      check_number_dtype, check_text_name, is_number_dtype, numbers_only, refuse_binary,
                      split_hdf5_path)
from .npz import npz_rank, read_npz
from .hdf5_storage import check_storage_written
from .pandas_table import in_table_index, is_pandas_table, read_pandas_table
from .text import MatrixSource, check_text_head, first_line, read_text_with_info


def read_matrix(spec: str, dataset: str | None = None, stdin=None, *, header: bool | None = None,
                index_col: bool = False):
    """Load the cost matrix named by ``spec`` (a path, ``FILE.h5:/path`` or ``-``)."""
    return read_matrix_with_info(spec, dataset, stdin, header=header, index_col=index_col)[0]


def read_matrix_with_info(spec: str, dataset: str | None = None, stdin=None, *, header: bool | None = None,
                          index_col: bool = False, text_inputs: tuple[str, ...] = (), coordinates: bool = False):
    """:func:`read_matrix`, returning ``(matrix, MatrixSource)``; ``header`` and ``index_col`` apply
    to text input only (see :func:`read_text_with_info`, and its ``coordinates``: a point set): a
    binary input refuses them, unless ``text_inputs`` names other inputs among several that may be
    text, for which they were given."""
    text_options = {"header": header, "index_col": index_col, "coordinates": coordinates}
    if spec == "-":
        if dataset is not None:
            refuse_dataset("stdin", dataset)
        data = stdin.read() if stdin is not None else _stdin_bytes()
        return read_stdin_with_info(data, **text_options, text_inputs=text_inputs)
    path, dataset = check_input_spec(spec, dataset)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        _refuse_text_options(str(path), "NPY", header, index_col, text_inputs)
        return read_npy(path), MatrixSource(str(path))
    if suffix in HDF5_SUFFIXES:
        _refuse_text_options(str(path), "HDF5", header, index_col, text_inputs)
        return read_hdf5(path, dataset), MatrixSource(str(path))
    if suffix == ".npz":
        _refuse_text_options(str(path), "NPZ", header, index_col, text_inputs)
        return read_npz(path, dataset), MatrixSource(str(path))
    data = path.read_bytes()
    refuse_binary(data, str(path), f"{suffix} is read as text: name it by what it holds")
    return read_text_with_info(data, str(path), delimiter=_text_delimiter(suffix), **text_options)


def _text_delimiter(suffix: str) -> str | None:
    return "\t" if suffix == ".tsv" else None  # else found in the text (lapcli.io.text)


def text_read_options(specs, header: bool | None, index_col: bool) -> dict:
    """--header, --no-header and --index-col as read options for the inputs ``specs``: among several,
    they are given for the text ones (by extension; stdin may be text), and a binary input reads
    without them; alone, or where no other input can be text (stdin read as NPY), it refuses them."""
    text = [spec for spec in specs if spec == "-" or Path(split_hdf5_path(spec)[0]).suffix.lower() in TEXT_SUFFIXES]
    return {"header": header, "index_col": index_col, "text_inputs": tuple(text) if len(specs) > 1 else ()}


def check_input_spec(spec: str, dataset: str | None = None) -> tuple[Path, str | None]:
    """The cheap checks of an input named on the command line, before anything is read: the file
    exists, is a readable regular file with a known extension and is not empty. Returns the path
    and the HDF5 dataset (``--dataset`` or the ``FILE.h5:/path`` tail)."""
    path_text, inner = split_hdf5_path(spec)
    path = Path(path_text)
    check_readable_file(path)
    suffix = path.suffix.lower()
    if suffix not in MATRIX_SUFFIXES:
        raise LapInputError(
            f"unknown file extension {suffix or '(none)'!r} for {path}; use one of {', '.join(MATRIX_SUFFIXES)}"
        )
    if path.stat().st_size == 0:
        raise LapInputError(f"{path} is empty")
    if dataset is not None and inner is not None and dataset.strip("/") != inner.strip("/"):
        raise LapInputError(f"{spec} names the dataset {inner} and --dataset names {dataset}; give one")
    if dataset is not None and suffix not in (*HDF5_SUFFIXES, ".npz"):
        refuse_dataset(str(path), dataset)
    return path, dataset or inner


def refuse_dataset(name: str, dataset: str) -> None:
    """A dataset named for input that has none (NPY, text, stdin): refused, not ignored, as the
    caller meant some other matrix than the one that would be read."""
    raise LapInputError(f"--dataset {dataset} names a dataset, but {name} is not HDF5 or NPZ")


def _read_group(path: Path, name: str, group, load: bool):
    """A group of 2-D datasets, a ragged batch: its datasets as a :class:`Batch`;
    ``load=False`` gives 3, a batch's rank."""
    import h5py

    for key in group:
        check_text_name(path, key, name)
    members = {key: node for key, node in group.items() if isinstance(node, h5py.Dataset)}
    others = sorted(set(group) - set(members))  # subgroups, links to nothing: said, not skipped
    odd = [f"{key} is {node.ndim}-D" if node.ndim != 2 else f"{key} holds {node.dtype}" for key, node in members.items()
           if node.ndim != 2 or not is_number_dtype(node.dtype)]  # the members in the way, named
    if not members or others or odd:
        held = (f" (it holds {', '.join(others[:5])}{', …' if len(others) > 5 else ''}, which are no datasets)" if others
                else f" ({', '.join(odd[:5])}{', …' if len(odd) > 5 else ''})" if odd else " of no dataset")
        raise LapInputError(f"{path}:{name} is a group{held}; a batch of problems is a group of 2-D numeric datasets")
    order = batch_order(members)
    for key in order if load else ():
        check_storage_written(path, f"{name}/{key}", members[key])
    return 3 if not load else Batch(order, [members[key][()] for key in order])


def input_rank(spec: str, dataset: str | None = None, *, header: bool | None = None,
               index_col: bool = False, text_inputs: tuple[str, ...] = (), text_head: bool = False,
               coordinates: bool = False) -> int | None:
    """How many dimensions the input named by ``spec`` has, found without loading its data (NPY:
    the header, HDF5: the dataset's shape, text: 2); None for stdin, which can be read only once.
    Raises what reading it would raise for a missing file, a bad extension, a bad NPY header, an
    HDF5 file without a usable dataset, text options on binary input (see
    :func:`read_matrix_with_info`), or (``text_head``: its first lines read, for an input read after
    others) a text header that needs --header, --no-header or --index-col (``coordinates``: of a point set)."""
    if spec == "-":  # (a dataset it never has: refused before earlier inputs are solved)
        return refuse_dataset("stdin", dataset) if dataset is not None else None
    path, dataset = check_input_spec(spec, dataset)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        _refuse_text_options(str(path), "NPY", header, index_col, text_inputs)
        return read_npy(path).ndim  # memory-mapped: only the header is read
    if suffix in HDF5_SUFFIXES:
        _refuse_text_options(str(path), "HDF5", header, index_col, text_inputs)
        return read_hdf5(path, dataset, load=False)
    if suffix == ".npz":
        _refuse_text_options(str(path), "NPZ", header, index_col, text_inputs)
        return npz_rank(path, dataset)  # the members' headers: 3 for several matrices, a (ragged) batch
    if text_head:
        check_text_head(path, _text_delimiter(suffix), header=header, index_col=index_col, coordinates=coordinates)
    return 2


def _refuse_text_options(name: str, kind: str, header: bool | None, index_col: bool, text_inputs) -> None:
    """A binary input refuses the text options, unless they were given for other inputs that may be text."""
    if not text_inputs and (header is not None or index_col):
        raise LapInputError(f"{name} is {kind}: --header, --no-header and --index-col apply to text input only")


def check_readable_file(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise LapInputError(f"no such file: {path}") from None
    except OSError as error:
        raise LapInputError(f"cannot read {path}: {error.strerror}") from None
    if stat.S_ISDIR(mode):
        raise LapInputError(f"{path} is a directory, not a file")
    if not stat.S_ISREG(mode):
        raise LapInputError(f"{path} is not a regular file (use '-' to read a pipe from stdin)")
    if not os.access(path, os.R_OK):
        raise LapInputError(f"cannot read {path}: permission denied")


def _stdin_bytes() -> bytes:
    """The process's stdin, whole: its bytes (a stream's buffer, or a BytesIO's own), or a text
    stream's text as UTF-8 (a notebook's or a test's StringIO has no bytes beneath); none, closed or
    unreadable is bad input, in one line."""
    stream = sys.stdin
    try:
        if stream is None:
            raise ValueError("this process has none")
        data = getattr(stream, "buffer", stream).read()
        return data.encode() if isinstance(data, str) else bytes(data)
    except LapInputError:  # the CLI's stand-in for a closed descriptor 0 says it already
        raise
    except (OSError, ValueError, AttributeError, TypeError) as error:
        raise LapInputError(f"stdin cannot be read: {first_line(error)}") from None


def read_stdin_with_info(data: bytes, *, header: bool | None = None, index_col: bool = False,
                         text_inputs: tuple[str, ...] = (), coordinates: bool = False):
    if not data:
        raise LapInputError("stdin is empty")
    if data.startswith(NPY_MAGIC):
        _refuse_text_options("stdin", "NPY", header, index_col, [spec for spec in text_inputs if spec != "-"])
        stream = io.BytesIO(data)
        try:
            array = np.load(stream, allow_pickle=False)
        except (ValueError, OSError, EOFError) as error:
            raise LapInputError(f"stdin is not a readable NPY stream: {first_line(error)}") from None
        if data[stream.tell():].strip():  # two arrays in one stream (the second was dropped); a newline is none
            raise LapInputError(f"stdin holds more than its NPY array ({len(data) - stream.tell():,} bytes after "
                                "it); stdin takes one matrix: give several as files")
        return numbers_only(array, "stdin"), MatrixSource("stdin")
    refuse_binary(data, "stdin", "stdin takes NPY or text: give the file instead")
    return read_text_with_info(data, "stdin", header=header, index_col=index_col, coordinates=coordinates)


def read_npy(path: Path):
    """Memory-map an NPY file; a header that promises more bytes than the file holds is refused
    here, before anything is allocated, and bytes past its array (a second array, ``cat a.npy b.npy``,
    which np.load drops) as stdin's are."""
    with open(path, "rb") as handle:  # np.load takes anything else for a pickle
        if handle.read(len(NPY_MAGIC)) != NPY_MAGIC:
            raise LapInputError(f"cannot read {path} as NPY: it is not an NPY file (no NPY header; what np.save "
                                "writes)")
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError as error:
        message = first_line(error)
        if "pickle" in message.lower():
            message = "it holds Python objects, not numbers"
        elif "mmap length" in message or "larger than" in message:
            message = "the file is shorter than its header says (truncated?)"
        raise LapInputError(f"cannot read {path} as NPY: {message}") from None
    except (OSError, EOFError) as error:
        if getattr(error, "errno", None) == errno.ENOMEM:  # no room to map it: the machine's limit, not bad input
            raise MemoryError(f"mapping {path}: {error.strerror}") from None
        raise LapInputError(f"cannot read {path} as NPY: {first_line(error)}") from None
    _refuse_trailing_bytes(path, getattr(array, "offset", 0) + array.nbytes)
    return numbers_only(array, str(path))


def _refuse_trailing_bytes(path: Path, end: int) -> None:
    """Refuse an NPY file with more than whitespace after its array's ``end`` (bytes)."""
    past = path.stat().st_size - end
    if past > 0:
        with open(path, "rb") as handle:
            handle.seek(end)
            tail = handle.read(min(past, 4096))
        if tail.strip() or past > len(tail):
            raise LapInputError(f"{path} holds more than its NPY array ({past:,} bytes after it); an NPY file "
                                "holds one array (several: np.savez, or one 3-D stack)")

def read_hdf5(path: Path, dataset: str | None, *, load: bool = True):
    """The matrix (2-D) or stack of matrices (3-D) in ``dataset``, or, without ``dataset``, in the
    file's only 2-D or 3-D dataset; ``load=False`` returns its number of dimensions instead."""
    import h5py

    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise LapInputError(f"cannot read {path} as HDF5: {first_line(error)}") from None
    with handle:
        try:
            return _read_open_hdf5(handle, path, dataset, load)
        except (KeyError, OSError, TypeError) as error:  # a broken link, a corrupt chunk, an odd pandas table
            where = f"{path}:{dataset}" if dataset else str(path)
            raise LapInputError(f"cannot read {where} as HDF5: {first_line(error)}") from None


def _external_links_hint(handle, path: Path) -> str:
    """Where the file links to datasets in other files (which the scan does not follow): how to name one."""
    import h5py

    links: list[str] = []
    if hasattr(handle, "visititems_links"):  # h5py 3.11 and newer
        handle.visititems_links(lambda name, link: links.append(name) if isinstance(link, h5py.ExternalLink) else None)
    return f"; its external links are not searched: name one, as {path}:/{links[0]}" if links else ""


def _read_open_hdf5(handle, path: Path, dataset: str | None, load: bool):
    """read_hdf5 on the open file ``handle``."""
    import h5py

    if dataset is None:
        candidates = []

        def visit(name, obj):  # matrices, stacks and pandas tables; not PyTables' index internals
            check_text_name(path, name)
            if in_table_index(handle, name):
                return
            if is_pandas_table(obj) or (isinstance(obj, h5py.Dataset) and obj.ndim in (2, 3)
                                         and not is_pandas_table(obj.parent)):
                candidates.append(name)

        handle.visititems(visit)
        if not candidates:
            raise LapInputError(f"{path} holds no 2-D dataset (a matrix, or a point set) or 3-D one (a stack)"
                                + _external_links_hint(handle, path))
        parents = {name.rpartition("/")[0] for name in candidates}
        if len(parents) == 1 and "" not in parents and (len(candidates) > 1 or _marked_batch(handle, candidates[0])):
            # one group holds them all (what `lap generate --ragged -o FILE.h5` writes; one alone where it says so)
            candidates = [parents.pop()]
        if len(candidates) > 1:
            raise LapInputError(
                f"{path} holds several 2-D/3-D datasets ({', '.join('/' + c for c in candidates)}); "
                "choose one with --dataset NAME or FILE.h5:/NAME"
            )
        dataset = candidates[0]
    if dataset not in handle:
        raise LapInputError(f"{path} has no dataset {dataset!r}")
    node = handle[dataset]
    if is_pandas_table(node):
        return 2 if not load else read_pandas_table(path, dataset, node)
    if isinstance(node, h5py.Group):
        return _read_group(path, dataset, node, load)
    if node.ndim not in (2, 3):
        raise LapInputError(f"{path}:{dataset} is {node.ndim}-D; lapcli reads a 2-D array (a cost matrix, or "
                            "a point set one point a row) or a 3-D stack of matrices")
    check_number_dtype(node.dtype, f"{path}:{dataset}")
    if not load:
        return node.ndim
    check_storage_written(path, dataset, node)
    mapped = _memory_map(path, node)
    return mapped if mapped is not None else node[()]  # chunked, filtered or unwritten: read whole


def _marked_batch(handle, name: str) -> bool:
    """Whether the lone matrix ``name`` is a batch of one: its group carries the mark lapcli's batch outputs
    write (io.formats.BATCH_MARK), as a lone dataset named 0 may be anybody's matrix."""
    mark = handle[name].parent.attrs.get(BATCH_MARK[0])  # anybody's attribute of that name: an array, too
    return isinstance(mark, str) and mark == BATCH_MARK[1] and handle[name].ndim == 2


def _memory_map(path: Path, node):
    """A contiguous, unfiltered HDF5 dataset lies in the file as one C-order block, as an NPY
    body does: map it read-only instead of reading it, so a GPU solve pages it straight into the
    pinned upload ring, as it does an NPY file. Anything else (chunks, compression, storage not
    yet allocated), a dataset another file holds (an external link: its offset is in that
    file, and mapping ``path`` there read other bytes) and values stored in another layout than
    NumPy's dtype of them (12-bit integers at bit 4 of 16, a 4-byte float h5py converts to
    float64: HDF5 converts them as it reads, their bytes mapped are other numbers): None."""
    from h5py import h5t

    offset = node.id.get_offset()
    if node.chunks is not None or node.compression is not None or offset is None or node.size == 0:
        return None
    if node.id.get_type() != h5t.py_create(node.dtype):
        return None
    try:
        in_path = os.path.samefile(node.file.filename, path)
    except OSError:
        in_path = False
    return np.memmap(path, dtype=node.dtype, mode="r", offset=offset, shape=node.shape) if in_path else None
