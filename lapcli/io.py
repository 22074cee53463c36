"""Read cost matrices and write matrices, assignments and reports, failing with one clear line.

Readers: ``.npy`` (memory-mapped: nothing is loaded until a solver reads it), ``.csv``/``.tsv``/
``.txt`` (comma, tab or whitespace; a first line without numbers is a header, and the
reader says so; an ambiguous first line is refused: see :func:`read_text_with_info`), ``.h5``/``.hdf5``
(``--dataset NAME`` or ``FILE.h5:/path``), and ``-`` for stdin (NPY by its magic bytes, else CSV).
NPY and HDF5 may also hold a stack of matrices (3-D, batch first); :func:`input_rank` tells which
without loading the data.

Writers never leave a partial file: they write a temporary file in the target folder and rename
it over the target only once it is complete and fsync'ed (the rename is atomic on POSIX); the file
then has the mode the umask gives a new file.
"""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import LapInputError

NPY_MAGIC = b"\x93NUMPY"
MATRIX_SUFFIXES = (".npy", ".csv", ".tsv", ".txt", ".h5", ".hdf5")
ASSIGNMENT_SUFFIXES = (".csv", ".npy", ".json")
DUALS_SUFFIXES = (".npz", ".json")
HDF5_SUFFIXES = (".h5", ".hdf5")


# ----------------------------------------------------------------------------- reading
def split_hdf5_path(spec: str) -> tuple[str, str | None]:
    """``FILE.h5:/group/data`` -> (``FILE.h5``, ``/group/data``); other paths unchanged."""
    for suffix in HDF5_SUFFIXES:
        marker = suffix + ":"
        if marker in spec:
            head, _, tail = spec.partition(marker)
            return head + suffix, tail or None
    return spec, None


@dataclass
class MatrixSource:
    """What the reader decided on its own about an input, so that the CLI can say so."""

    name: str
    skipped_header: str | None = None  # the first line, when it was skipped as a header
    dropped_index_column: bool = False
    notes: list[str] = field(default_factory=list)  # one line each, for people (stderr)


def read_matrix(spec: str, dataset: str | None = None, stdin=None, *, header: bool | None = None,
                index_col: bool = False):
    """Load the cost matrix named by ``spec`` (a path, ``FILE.h5:/path`` or ``-``)."""
    return read_matrix_with_info(spec, dataset, stdin, header=header, index_col=index_col)[0]


def read_matrix_with_info(spec: str, dataset: str | None = None, stdin=None, *, header: bool | None = None,
                          index_col: bool = False):
    """:func:`read_matrix`, returning ``(matrix, MatrixSource)``; ``header`` and ``index_col`` apply
    to text input only (see :func:`read_text_with_info`)."""
    text_options = {"header": header, "index_col": index_col}
    if spec == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return read_stdin_with_info(stream.read(), **text_options)
    path, dataset = check_input_spec(spec, dataset)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        _refuse_text_options(str(path), "NPY", text_options)
        return read_npy(path), MatrixSource(str(path))
    if suffix in HDF5_SUFFIXES:
        _refuse_text_options(str(path), "HDF5", text_options)
        return read_hdf5(path, dataset), MatrixSource(str(path))
    return read_text_with_info(path.read_bytes(), str(path), delimiter="\t" if suffix == ".tsv" else None,
                               **text_options)


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
    return path, dataset or inner


def input_rank(spec: str, dataset: str | None = None, *, header: bool | None = None,
               index_col: bool = False) -> int | None:
    """How many dimensions the input named by ``spec`` has, found without loading its data (NPY:
    the header, HDF5: the dataset's shape, text: 2); None for stdin, which can be read only once.
    Raises what reading it would raise for a missing file, a bad extension, a bad NPY header, an
    HDF5 file without a usable dataset, or text options on binary input."""
    if spec == "-":
        return None
    path, dataset = check_input_spec(spec, dataset)
    suffix = path.suffix.lower()
    text_options = {"header": header, "index_col": index_col}
    if suffix == ".npy":
        _refuse_text_options(str(path), "NPY", text_options)
        return read_npy(path).ndim  # memory-mapped: only the header is read
    if suffix in HDF5_SUFFIXES:
        _refuse_text_options(str(path), "HDF5", text_options)
        return read_hdf5(path, dataset, load=False)
    return 2


def _refuse_text_options(name: str, kind: str, text_options: dict) -> None:
    if text_options["header"] is not None or text_options["index_col"]:
        raise LapInputError(f"{name} is {kind}: --header, --no-header and --index-col apply to text input only")


def check_readable_file(path: Path) -> None:
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise LapInputError(f"no such file: {path}") from None
    except OSError as error:
        raise LapInputError(f"cannot read {path}: {error.strerror}") from None
    if stat.S_ISDIR(mode):
        raise LapInputError(f"{path} is a directory, not a matrix file")
    if not stat.S_ISREG(mode):
        raise LapInputError(f"{path} is not a regular file (use '-' to read a pipe from stdin)")
    if not os.access(path, os.R_OK):
        raise LapInputError(f"cannot read {path}: permission denied")


def read_stdin(data: bytes, *, header: bool | None = None, index_col: bool = False):
    return read_stdin_with_info(data, header=header, index_col=index_col)[0]


def read_stdin_with_info(data: bytes, *, header: bool | None = None, index_col: bool = False):
    if not data:
        raise LapInputError("stdin is empty")
    if data.startswith(NPY_MAGIC):
        _refuse_text_options("stdin", "NPY", {"header": header, "index_col": index_col})
        try:
            return np.load(io.BytesIO(data), allow_pickle=False), MatrixSource("stdin")
        except (ValueError, OSError, EOFError) as error:
            raise LapInputError(f"stdin is not a readable NPY stream: {first_line(error)}") from None
    return read_text_with_info(data, "stdin", header=header, index_col=index_col)


def read_npy(path: Path):
    """Memory-map an NPY file; a header that promises more bytes than the file holds is refused
    here, before anything is allocated."""
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
        raise LapInputError(f"cannot read {path} as NPY: {first_line(error)}") from None
    return array


def check_host_memory(bytes_needed: int, what: str) -> None:
    """Refuse to parse when the result clearly cannot fit in the memory that is available."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return
    if bytes_needed > available:
        raise LapInputError(
            f"{what} needs about {bytes_needed / 2**30:.1f} GiB of memory, only "
            f"{available / 2**30:.1f} GiB are available; convert it to .npy (memory-mapped)"
        )


def read_text(data: bytes, name: str, delimiter: str | None = None, *, header: bool | None = None,
              index_col: bool = False):
    """Parse CSV/TSV/whitespace text into an int64 (if every value is an integer) or float64 matrix."""
    return read_text_with_info(data, name, delimiter, header=header, index_col=index_col)[0]


def read_text_with_info(data: bytes, name: str, delimiter: str | None = None, *, header: bool | None = None,
                        index_col: bool = False):
    """:func:`read_text`, returning ``(matrix, MatrixSource)``.

    ``header`` True or False settles whether the first line is a header. ``None`` never guesses
    silently: a first line none of whose fields is a number is a header (skipped, with a note);
    a first line that mixes numbers and text, or that is exactly ``0,1,…,m−1`` (the column labels
    pandas writes by default), is refused; any other numeric line is data. ``index_col`` drops the
    first column, as pandas' default ``to_csv()`` writes it (header ``,0,1,…``); such a file is
    refused without it. Errors name the line (1-based, in the file) and the column.
    """
    text = data.decode("utf-8-sig", errors="replace")  # -sig: a BOM is not part of the first field
    lines = text.splitlines()
    first_index = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first_index is None:
        raise LapInputError(f"{name} holds no numbers")
    first = lines[first_index]
    second_index = next((i for i in range(first_index + 1, len(lines)) if lines[i].strip()), None)
    if delimiter is None:  # from the first two lines: a header or comment alone may hold no delimiter
        sample = first + "\n" + ("" if second_index is None else lines[second_index])
        delimiter = "," if "," in sample else ("\t" if "\t" in sample else None)
    fields = _split_fields(first, delimiter)
    line_number = first_index + 1
    second_width = None if second_index is None else len(_split_fields(lines[second_index], delimiter))
    empty_first_label = len(fields) > 1 and not fields[0].strip() and any(f.strip() for f in fields[1:])
    if empty_first_label and not index_col and header is not False:
        raise LapInputError(_index_column_hint(name, "empty first header field"))
    guessed = header is None
    if guessed:
        header = _first_line_is_header(fields, name, line_number, index_col, second_width)
    source = MatrixSource(name, dropped_index_column=index_col)
    start = first_index
    if header:
        start = first_index + 1
        source.skipped_header = first
        if guessed:  # no option asked for it: say so
            source.notes.append(f"skipped header line of {name}: {_shorten(first.strip())}")
        # pandas with sep=" " writes no empty first field to see; a comment is not a header to count
        if delimiter is None and not index_col and second_width == len(fields) + 1 and not first.lstrip().startswith("#"):
            raise LapInputError(_index_column_hint(
                name, f"line {line_number} has {_columns(len(fields))}, line {second_index + 1} has {second_width}"))
    body = lines[start:]
    if not any(line.strip() for line in body):
        raise LapInputError(f"{name} holds no numbers")
    # float64 per value, plus the parser's own copy of the text
    check_host_memory(8 * len(fields) * len(body) + len(data), f"parsing {name}")
    if index_col:
        body = _drop_index_column(body, start, delimiter, name)
    options = {"delimiter": delimiter, "ndmin": 2}
    if delimiter is not None:
        options["quotechar"] = '"'
    try:  # integers stay exact; anything else parses as float64
        matrix = np.loadtxt(body, dtype=np.int64, **options)
    except (ValueError, OverflowError):
        try:
            matrix = np.loadtxt(body, dtype=np.float64, **options)
        except ValueError as error:
            # numpy counts rows its own way (data rows, 0- or 1-based): find the line ourselves
            located = _locate_bad_value(lines, start, delimiter, name, index_col)
            raise LapInputError(located or f"cannot parse {name}: {first_line(error)}") from None
    if matrix.shape[1] == 0:
        raise LapInputError(f"{name} holds no numbers besides its index column")
    return matrix, source


def _split_fields(line: str, delimiter: str | None) -> list[str]:
    if delimiter is None:
        return line.split()
    return next(csv.reader([line], delimiter=delimiter), [])


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _columns(count: int) -> str:
    return f"{count} column" + ("" if count == 1 else "s")


def _index_column_hint(name: str, why: str) -> str:
    return f"{name} looks like it has an index column ({why}); pass --index-col to drop it"


def _first_line_is_header(fields: list[str], name: str, line_number: int, index_col: bool,
                          next_width: int | None) -> bool:
    if index_col and (not fields[0].strip() or next_width == len(fields) + 1):
        return True  # pandas' header: an empty index name (or none at all with sep=" "), then the labels
    offset = 1 if index_col else 0
    labels = fields[offset:]
    numeric = [_is_number(label) for label in labels]
    if not any(numeric):
        return True
    if not all(numeric):
        bad = numeric.index(False)
        raise LapInputError(
            f"{name} line {line_number}, column {bad + offset + 1}: {labels[bad].strip()!r} is not a number "
            f"(use --header if line {line_number} is a header)"
        )
    if next_width is not None and [label.strip() for label in labels] == [str(i) for i in range(len(labels))]:
        raise LapInputError(
            f"{name} line {line_number} ({_shorten(','.join(labels), 40)}) could be pandas' default column "
            "labels or data; pass --header or --no-header"
        )
    return False


def _drop_index_column(body: list[str], start: int, delimiter: str | None, name: str) -> list[str]:
    kept = []
    for offset, line in enumerate(body):
        if not line.strip() or line.lstrip().startswith("#"):
            kept.append(line)
            continue
        if delimiter is None:
            rest = line.split(None, 1)[1:]
            rest = rest[0] if rest else ""
        elif '"' in line:  # a quoted index may hold the delimiter
            rest = delimiter.join(_split_fields(line, delimiter)[1:])
        else:
            rest = line.partition(delimiter)[2]
        if not rest.strip():
            raise LapInputError(f"{name} line {start + offset + 1} holds only its index column")
        kept.append(rest)
    return kept


def _locate_bad_value(lines: list[str], start: int, delimiter: str | None, name: str, index_col: bool) -> str | None:
    """The first ragged row or non-numeric field from ``lines[start]`` on, in np.loadtxt's terms."""
    expected = expected_line = None
    first_column = 1 if index_col else 0
    for index in range(start, len(lines)):
        content = lines[index].split("#", 1)[0]  # np.loadtxt's comments
        if not content.strip():
            continue
        fields = _split_fields(content, delimiter)
        if expected is None:
            expected, expected_line = len(fields), index + 1
        elif len(fields) != expected:
            return (f"cannot parse {name}: ragged rows: line {index + 1} has {_columns(len(fields))}, "
                    f"line {expected_line} has {_columns(expected)}")
        for column in range(first_column, len(fields)):
            if not _is_number(fields[column]):
                return f"{name} line {index + 1}, column {column + 1}: {fields[column].strip()!r} is not a number"
    return None


def read_hdf5(path: Path, dataset: str | None, *, load: bool = True):
    """The matrix (2-D) or stack of matrices (3-D) in ``dataset``, or, without ``dataset``, in the
    file's only 2-D or 3-D dataset; ``load=False`` returns its number of dimensions instead."""
    import h5py

    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise LapInputError(f"cannot read {path} as HDF5: {first_line(error)}") from None
    with handle:
        if dataset is None:
            candidates = []
            handle.visititems(lambda name, obj: candidates.append(name)
                              if isinstance(obj, h5py.Dataset) and obj.ndim in (2, 3) else None)
            if not candidates:
                raise LapInputError(f"{path} holds no 2-D dataset (matrix) or 3-D dataset (stack of matrices)")
            if len(candidates) > 1:
                raise LapInputError(
                    f"{path} holds several 2-D/3-D datasets ({', '.join('/' + c for c in candidates)}); "
                    "choose one with --dataset NAME or FILE.h5:/NAME"
                )
            dataset = candidates[0]
        if dataset not in handle:
            raise LapInputError(f"{path} has no dataset {dataset!r}")
        node = handle[dataset]
        if not isinstance(node, h5py.Dataset):
            raise LapInputError(f"{path}:{dataset} is a group, not a dataset")
        if node.ndim not in (2, 3):
            raise LapInputError(f"{path}:{dataset} is {node.ndim}-D; a cost matrix must be 2-D "
                                "(or 3-D: a stack of matrices)")
        if node.dtype.kind not in "biuf":
            raise LapInputError(f"{path}:{dataset} has dtype {node.dtype}; a cost matrix holds numbers")
        if not load:
            return node.ndim
        mapped = _memory_map(path, node)
        return mapped if mapped is not None else node[()]  # chunked, filtered or unwritten: read whole


def _memory_map(path: Path, node):
    """A contiguous, unfiltered HDF5 dataset lies in the file as one C-order block, as an NPY
    body does: map it read-only instead of reading it, so a GPU solve pages it straight into the
    pinned upload ring, as it does an NPY file (issue #15). Anything else (chunks, compression,
    storage not yet allocated): None."""
    offset = node.id.get_offset()
    if node.chunks is not None or node.compression is not None or offset is None or node.size == 0:
        return None
    return np.memmap(path, dtype=node.dtype, mode="r", offset=offset, shape=node.shape)


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


# ----------------------------------------------------------------------------- writing
def check_output_path(path: str, suffixes: tuple[str, ...], what: str) -> None:
    """Fail before any work when an output could not be written."""
    if path == "-":
        return
    target = Path(path)
    suffix = target.suffix.lower()
    if suffix not in suffixes:
        raise LapInputError(f"unknown {what} extension {suffix or '(none)'!r}; use one of {', '.join(suffixes)}")
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise LapInputError(f"cannot write {target}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise LapInputError(f"cannot write {target}: folder {folder} is not writable")
    if target.is_dir():
        raise LapInputError(f"cannot write {target}: it is a directory")


@contextmanager
def atomic_output(path: str, mode: str = "wb"):
    """Yield a temporary file next to ``path``; rename it to ``path`` only once it is complete.

    On any exception (including KeyboardInterrupt and the CLI's SIGTERM) the temporary file is
    removed. The data is flushed and fsync'ed before the rename, so a crash after it cannot leave
    an empty or partial file under the final name, and the file gets the mode the umask gives any
    new file (``mkstemp`` makes it 0600)."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    except OSError as error:
        raise LapInputError(f"cannot write {target}: {error.strerror}") from None
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, 0o666 & ~current_umask())
        os.replace(temp_name, target)
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise


def current_umask() -> int:
    """The process umask. Linux shows it in /proc/self/status, so it is read without changing it;
    elsewhere it is set and restored at once, to 0o077 meanwhile, so that a file another thread
    creates in that instant is too private rather than too open."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o077)
    os.umask(mask)
    return mask


def write_matrix(path: str, matrix: np.ndarray, dataset: str = "costs") -> None:
    """Write a matrix to .npy, .csv or .h5/.hdf5 (atomically), or NPY to stdout for ``-``; a 3-D
    stack to .npy or .h5. :func:`write_matrix_blocks` with the whole array as its one block."""
    matrix = np.asarray(matrix)
    write_matrix_blocks(path, matrix.shape, matrix.dtype, [matrix], dataset)


def write_matrix_blocks(path: str, shape: tuple[int, ...], dtype, blocks,
                        dataset: str = "costs", stdout=None) -> None:
    """Write the array of ``shape`` and ``dtype`` that ``blocks`` make, streaming: each block is
    written as it comes, so a matrix larger than memory takes one block's memory (issue #15).

    The blocks are consecutive rows of the array in C order: arrays of ``dtype`` whose last axis
    is the array's (a 2-D matrix's blocks are row blocks; a stack's may be rows of its (B·n, m)
    view or whole problems). Blocks that do not fill ``shape`` exactly raise ValueError: no short
    file is ever written. ``path`` is a file (written atomically, as every writer here: an error,
    Ctrl-C or SIGTERM leaves no file) or ``-`` for NPY on stdout. Formats as :func:`write_matrix`:
    NPY (the bytes ``np.save`` writes), CSV (``np.savetxt``, one block at a time), HDF5 (one
    contiguous dataset, no chunks or compression, as memory-mapping readers want)."""
    shape, dtype = tuple(int(size) for size in shape), np.dtype(dtype)
    suffix = ".npy" if path == "-" else Path(path).suffix.lower()
    if len(shape) not in (2, 3):
        raise ValueError(f"a matrix is 2-D and a stack 3-D, not {len(shape)}-D {shape}")
    if len(shape) == 3 and suffix not in (".npy",) + HDF5_SUFFIXES:
        raise LapInputError(f"{path}: a stack of matrices (3-D) is written to .npy or .h5/.hdf5, not {suffix}")
    rows = _checked_rows(shape, dtype, blocks)
    if path == "-":
        stream = stdout if stdout is not None else sys.stdout.buffer
        _write_npy(stream, shape, dtype, rows)
        stream.flush()
        return
    if suffix in HDF5_SUFFIXES:
        import h5py

        with atomic_output(path) as handle:
            with h5py.File(handle, "w") as h5:
                _write_hdf5_rows(h5.create_dataset(dataset, shape=shape, dtype=dtype), rows)
        return
    with atomic_output(path) as handle:
        if suffix == ".npy":
            _write_npy(handle, shape, dtype, rows)
        else:
            for start, block in rows:
                np.savetxt(handle, block, delimiter=",", fmt=_text_format(dtype))


def _checked_rows(shape: tuple[int, ...], dtype: np.dtype, blocks):
    """Yield ``(first_row, block)`` for each block as a C-contiguous (rows, m) view, rows counted
    in the (prod(shape[:-1]), m) view of the array; raise ValueError (before anything of it is
    written) for a block of another dtype or width, or one too many rows, and after the last
    block if the rows fall short."""
    width, total, start = shape[-1], int(np.prod(shape[:-1], dtype=np.int64)), 0
    for block in blocks:
        if block.dtype != dtype or block.ndim < 1 or block.shape[-1] != width:
            raise ValueError(f"a block of {block.shape} {block.dtype} in an array of {shape} {dtype}")
        block = np.ascontiguousarray(block).reshape(int(np.prod(block.shape[:-1], dtype=np.int64)), width)
        if start + len(block) > total:
            raise ValueError(f"the blocks hold more than the {total} rows of {shape}")
        yield start, block
        start += len(block)
    if start != total:
        raise ValueError(f"the blocks hold {start} of the {total} rows of {shape}; nothing more to write")


def _write_npy(handle, shape: tuple[int, ...], dtype: np.dtype, rows) -> None:
    """NPY: the header ``np.save`` writes (format 1.0, or 2.0 when it needs to be), then the raw
    C-order bytes of each block, written from its buffer (no copy)."""
    from numpy.lib import format as npy

    header = {"descr": npy.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
    try:
        npy.write_array_header_1_0(handle, header)
    except ValueError:  # the header is over 64 KiB: format 2.0, as np.save would switch to
        npy.write_array_header_2_0(handle, header)
    for start, block in rows:
        if block.size:  # memoryview cannot cast an empty view
            handle.write(memoryview(block).cast("B"))


def _write_hdf5_rows(ds, rows) -> None:
    """Write each (rows, m) block into dataset ``ds``, splitting a block that crosses from one
    problem of a stack into the next (h5py cannot address the stack's (B·n, m) view)."""
    height = ds.shape[-2]
    for start, block in rows:
        done = 0
        while done < len(block):
            index, row = divmod(start + done, height)
            count = min(len(block) - done, height - row)
            where = (slice(row, row + count),) if ds.ndim == 2 else (index, slice(row, row + count))
            ds[where] = block[done:done + count]
            done += count


def _text_format(dtype) -> str:
    return "%d" if np.dtype(dtype).kind in "biu" else "%.17g"


def assignment_bytes(path: str, rows: np.ndarray, cols: np.ndarray, n_rows: int) -> bytes:
    """Serialise an assignment: CSV ``row,col``; NPY the column of each row (−1: unassigned);
    JSON ``{"row_ind": [...], "col_ind": [...]}``."""
    suffix = ".csv" if path == "-" else Path(path).suffix.lower()
    if suffix == ".npy":
        column_of_row = np.full(n_rows, -1, dtype=np.int64)
        column_of_row[rows] = cols
        buffer = io.BytesIO()
        np.save(buffer, column_of_row)
        return buffer.getvalue()
    if suffix == ".json":
        return (json.dumps({"row_ind": rows.tolist(), "col_ind": cols.tolist()}) + "\n").encode()
    lines = ["row,col"] + [f"{r},{c}" for r, c in zip(rows.tolist(), cols.tolist())]
    return ("\n".join(lines) + "\n").encode()


def stack_assignment_bytes(path: str, col_ind: np.ndarray) -> bytes:
    """Serialise the assignments of a stack, ``col_ind`` (B, n) with −1 for an unassigned row:
    NPY the (B, n) int64 array; CSV ``problem,row,col`` (assigned pairs only); JSON
    ``{"col_ind": [[...], ...]}``."""
    suffix = ".csv" if path == "-" else Path(path).suffix.lower()
    col_ind = np.asarray(col_ind, dtype=np.int64)
    if suffix == ".npy":
        buffer = io.BytesIO()
        np.save(buffer, col_ind)
        return buffer.getvalue()
    if suffix == ".json":
        return (json.dumps({"col_ind": col_ind.tolist()}) + "\n").encode()
    problems, rows = np.nonzero(col_ind >= 0)
    lines = ["problem,row,col"] + [f"{b},{r},{c}" for b, r, c in
                                   zip(problems.tolist(), rows.tolist(), col_ind[problems, rows].tolist())]
    return ("\n".join(lines) + "\n").encode()


def duals_bytes(path: str, u: np.ndarray, v: np.ndarray) -> bytes:
    """Serialise duals: NPZ with arrays ``u`` (rows) and ``v`` (columns), or JSON ``{"u": [...],
    "v": [...]}`` (integers stay exact)."""
    if Path(path).suffix.lower() == ".npz":
        buffer = io.BytesIO()
        np.savez(buffer, u=u, v=v)
        return buffer.getvalue()
    return (json.dumps({"u": u.tolist(), "v": v.tolist()}) + "\n").encode()


def write_bytes(path: str, data: bytes, stdout=None) -> None:
    """Write to ``path`` atomically, or to stdout for ``-``."""
    if path == "-":
        stream = stdout if stdout is not None else sys.stdout.buffer
        stream.write(data)
        stream.flush()
        return
    with atomic_output(path) as handle:
        handle.write(data)
