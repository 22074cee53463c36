"""Read cost matrices and write matrices, assignments and reports, failing with one clear line.

Readers: ``.npy`` (memory-mapped: nothing is loaded until a solver reads it), ``.csv``/``.tsv``/
``.txt`` (comma, tab or whitespace; a non-numeric first line is a header), ``.h5``/``.hdf5``
(``--dataset NAME`` or ``FILE.h5:/path``), and ``-`` for stdin (NPY by its magic bytes, else CSV).

Writers never leave a partial file: they write a temporary file in the target folder and rename
it over the target only once it is complete (the rename is atomic on POSIX).
"""

from __future__ import annotations

import io
import json
import os
import stat
import sys
import tempfile
from contextlib import contextmanager
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


def read_matrix(spec: str, dataset: str | None = None, stdin=None):
    """Load the cost matrix named by ``spec`` (a path, ``FILE.h5:/path`` or ``-``)."""
    if spec == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return read_stdin(stream.read())
    path_text, inner = split_hdf5_path(spec)
    dataset = dataset or inner
    path = Path(path_text)
    check_readable_file(path)
    suffix = path.suffix.lower()
    if suffix not in MATRIX_SUFFIXES:
        raise LapInputError(
            f"unknown file extension {suffix or '(none)'!r} for {path}; use one of {', '.join(MATRIX_SUFFIXES)}"
        )
    if path.stat().st_size == 0:
        raise LapInputError(f"{path} is empty")
    if suffix == ".npy":
        return read_npy(path)
    if suffix in HDF5_SUFFIXES:
        return read_hdf5(path, dataset)
    return read_text(path.read_bytes(), str(path), delimiter="\t" if suffix == ".tsv" else None)


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


def read_stdin(data: bytes):
    if not data:
        raise LapInputError("stdin is empty")
    if data.startswith(NPY_MAGIC):
        try:
            return np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as error:
            raise LapInputError(f"stdin is not a readable NPY stream: {first_line(error)}") from None
    return read_text(data, "stdin")


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


def read_text(data: bytes, name: str, delimiter: str | None = None):
    """Parse CSV/TSV/whitespace text into an int64 (if every value is an integer) or float64 matrix."""
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start == len(lines):
        raise LapInputError(f"{name} holds no numbers")
    first = lines[start]
    if delimiter is None:
        delimiter = "," if "," in first else ("\t" if "\t" in first else None)
    if not _is_numeric_row(first, delimiter):
        start += 1  # a header line
    fields_per_row = len(first.split(delimiter))
    # float64 per value, plus the parser's own copy of the text
    check_host_memory(8 * fields_per_row * max(1, len(lines) - start) + len(data), f"parsing {name}")
    body = lines[start:]
    if not any(line.strip() for line in body):
        raise LapInputError(f"{name} holds no numbers")
    try:  # integers stay exact; anything else parses as float64
        return np.loadtxt(body, delimiter=delimiter, dtype=np.int64, ndmin=2)
    except (ValueError, OverflowError):
        pass
    try:
        return np.loadtxt(body, delimiter=delimiter, dtype=np.float64, ndmin=2)
    except ValueError as error:
        raise LapInputError(f"cannot parse {name}: {_explain_parse_error(first_line(error))}") from None


def _is_numeric_row(line: str, delimiter: str | None) -> bool:
    try:
        [float(field) for field in line.split(delimiter) if field.strip()]
        return True
    except ValueError:
        return False


def _explain_parse_error(message: str) -> str:
    if "number of columns changed" in message:
        return f"ragged rows: {message.split(';')[0]} (counting data rows from 1)"
    if "could not convert" in message:
        return f"non-numeric value: {message.rstrip('.')}"
    return message


def read_hdf5(path: Path, dataset: str | None):
    import h5py

    try:
        handle = h5py.File(path, "r")
    except OSError as error:
        raise LapInputError(f"cannot read {path} as HDF5: {first_line(error)}") from None
    with handle:
        if dataset is None:
            candidates = []
            handle.visititems(lambda name, obj: candidates.append(name)
                              if isinstance(obj, h5py.Dataset) and obj.ndim == 2 else None)
            if not candidates:
                raise LapInputError(f"{path} holds no 2-D dataset")
            if len(candidates) > 1:
                raise LapInputError(
                    f"{path} holds several 2-D datasets ({', '.join('/' + c for c in candidates)}); "
                    "choose one with --dataset NAME or FILE.h5:/NAME"
                )
            dataset = candidates[0]
        if dataset not in handle:
            raise LapInputError(f"{path} has no dataset {dataset!r}")
        node = handle[dataset]
        if not isinstance(node, h5py.Dataset):
            raise LapInputError(f"{path}:{dataset} is a group, not a dataset")
        if node.ndim != 2:
            raise LapInputError(f"{path}:{dataset} is {node.ndim}-D; a cost matrix must be 2-D")
        if node.dtype.kind not in "biuf":
            raise LapInputError(f"{path}:{dataset} has dtype {node.dtype}; a cost matrix holds numbers")
        return node[()]


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
    """Yield a temporary file next to ``path``; rename it to ``path`` only on success."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    try:
        fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=folder)
    except OSError as error:
        raise LapInputError(f"cannot write {target}: {error.strerror}") from None
    try:
        with os.fdopen(fd, mode) as handle:
            yield handle
        os.replace(temp_name, target)
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise


def write_matrix(path: str, matrix: np.ndarray, dataset: str = "costs") -> None:
    """Write a generated matrix to .npy, .csv or .h5/.hdf5 (atomically)."""
    suffix = Path(path).suffix.lower()
    if suffix in HDF5_SUFFIXES:
        import h5py

        with atomic_output(path) as handle:
            with h5py.File(handle, "w") as h5:
                h5.create_dataset(dataset, data=matrix)
        return
    with atomic_output(path) as handle:
        if suffix == ".npy":
            np.save(handle, matrix)
        else:
            np.savetxt(handle, matrix, delimiter=",", fmt=_text_format(matrix))


def _text_format(matrix: np.ndarray) -> str:
    return "%d" if matrix.dtype.kind in "biu" else "%.17g"


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
