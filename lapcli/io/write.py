"""Write matrices, assignments, duals and reports, never leaving a partial file.

Every file is written to a temporary file in the target folder and renamed over the target only
once it is complete and fsync'ed (the rename is atomic on POSIX); the file then has the mode the
umask gives a new file. ``-`` writes to stdout instead."""

from __future__ import annotations

import io
import json
import math
import os
import select
import sys
import time
import zipfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from ..errors import LapInputError, LapOutputError
from .formats import BATCH_MARK, DATA_FOLLOWS, HDF5_SUFFIXES
from .targets import is_device, new_temporary, stdout_alias, stream_alias, written_to


@contextmanager
def reporting_write_errors(name: str):
    """Raise an OS error met while writing ``name`` (a file, or ``stdout``) as LapOutputError,
    ``cannot write NAME: No space left on device``: a full disk, a quota or an I/O error is neither
    bad input nor a bug. A closed pipe stays BrokenPipeError: its reader went away (``| head``)."""
    try:
        yield
    except (BrokenPipeError, LapOutputError):
        raise
    except OSError as error:
        raise LapOutputError(f"cannot write {name}: {error.strerror or error}") from None


@contextmanager
def atomic_output(path: str, mode: str = "wb"):
    """Yield a temporary file next to ``path``; rename it to ``path`` only once it is complete.

    On any exception (including KeyboardInterrupt and the CLI's SIGTERM) the temporary file is
    removed. The data is flushed and fsync'ed before the rename, so a crash after it cannot leave
    an empty or partial file under the final name, and the file gets the mode the umask gives any
    new file (``mkstemp`` makes it 0600). An OS error while writing is LapOutputError."""
    target = Path(path)
    if is_device(path):  # /dev/null, a pipe: written in place; a rename would replace the device
        try:
            handle = open(path, mode)
        except OSError as error:
            raise LapInputError(f"cannot write {target}: {error.strerror}") from None
        with reporting_write_errors(target), handle:
            yield handle
        return
    if alias := stream_alias(path):  # /dev/stdout or /dev/stderr, its file no terminal: where the stream writes
        getattr(sys, alias).flush()  # (what the stream holds first: stderr's messages so far)
        with reporting_write_errors(alias):
            yield getattr(sys, alias).buffer
            flush_all(getattr(sys, alias).buffer)
        return
    final = written_to(path)
    fd, temp_name = _temporary_beside(final)
    try:
        with reporting_write_errors(target):
            with os.fdopen(fd, mode) as handle:
                yield handle
                _made_durable(handle, temp_name)
            os.replace(temp_name, final)
    except BaseException:
        try:
            os.unlink(temp_name)
        except FileNotFoundError:
            pass
        raise


def _temporary_beside(target: Path) -> tuple[int, str]:
    """(fd, name) of a new temporary file beside ``target``; LapOutputError (exit 1) if none can be made."""
    try:
        return new_temporary(target, target.parent if str(target.parent) else Path("."))
    except OSError as error:
        raise LapOutputError(f"cannot write {target}: {error.strerror}") from None


def _made_durable(handle, temp_name: str) -> None:
    """Flush and fsync a temporary file before its rename, and give it the mode the umask gives any
    new file (``mkstemp`` makes it 0600)."""
    handle.flush()
    os.fsync(handle.fileno())
    os.chmod(temp_name, 0o666 & ~current_umask())


def write_together(outputs: list[tuple[str, bytes]]) -> None:
    """Write several outputs as one: every regular file staged first (written and fsync'ed under a
    temporary name beside it, as :func:`atomic_output` does), then devices, pipes and ``-`` (stdout)
    written in place, and only then each staged file renamed into place, so that a full disk, a
    quota or a stdout that cannot be written leaves none of the files and replaces none that was
    there before. (A rename failing after that, rare in one folder, leaves stdout written and the
    files renamed before it: exit 1 all the same.)"""
    staged, in_place = [], []
    try:
        for path, data in outputs:
            alias = stream_alias(path)  # a link to /dev/stdout: stdout (to stderr: written through it)
            if path == "-" or alias or is_device(path):
                in_place.append(("-" if alias == "stdout" else path, data))
                continue
            target = written_to(path)
            fd, temp_name = _temporary_beside(target)
            staged.append((temp_name, target))
            with reporting_write_errors(target), os.fdopen(fd, "wb") as handle:
                handle.write(data)
                _made_durable(handle, temp_name)
        for path, data in in_place:
            write_bytes(path, data)
        for temp_name, target in staged:
            with reporting_write_errors(target):
                os.replace(temp_name, target)
    except BaseException:
        for temp_name, _ in staged:
            try:
                os.unlink(temp_name)
            except FileNotFoundError:  # renamed into place already
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
    written as it comes, so a matrix larger than memory takes one block's memory.

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
        raise LapInputError(f"{path}: a stack of matrices (3-D) is written to .npy or .h5/.hdf5, not "
                            f"{suffix or 'CSV (a name without extension)'}")
    rows = _checked_rows(shape, dtype, blocks)
    if path == "-":
        stream = stdout if stdout is not None else sys.stdout.buffer
        with reporting_write_errors("stdout"):
            _write_npy(stream, shape, dtype, rows)
            flush_all(stream)
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
                if start == 0 and len(block) and np.array_equal(block[0], np.arange(shape[-1])):  # %.17g: 0,1 too
                    handle.write(f"{DATA_FOLLOWS}\n".encode())  # else read back as pandas' column labels
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
            write_all(handle, memoryview(block).cast("B"))


def write_all(stream, data) -> None:
    """Write every byte of ``data``: a buffered stream on a pipe whose reader left returns the
    bytes the pipe took (64 KiB) and raises nothing; the next write raises BrokenPipeError, so a
    `lap solve stack.npy -o - | head` no longer ends 0 having written part of its answer. A raw
    stream (PYTHONUNBUFFERED, ``python -u``) on a non-blocking pipe returns None for a write that
    would block, having written nothing: it waits until the pipe takes more."""
    view = memoryview(data)
    while view:
        try:
            written = stream.write(view)
        except BlockingIOError as error:  # a buffered stream on a non-blocking pipe: it took this much
            written = error.characters_written
            _wait_writable(stream)
        if written is None:
            if not isinstance(stream, io.RawIOBase):  # a stream that does not count: taken as all written
                return
            _wait_writable(stream)  # a raw one: the write would have blocked, nothing was written
            continue
        view = view[written:]


def flush_all(stream) -> None:
    """``stream.flush()``, waiting where a non-blocking pipe cannot take the buffer yet (its
    BlockingIOError left the rest for a flush at exit, which failed again: exit 120)."""
    while True:
        try:
            stream.flush()
            return
        except BlockingIOError:
            _wait_writable(stream)


def _wait_writable(stream) -> None:
    try:
        select.select([], [stream.fileno()], [])
    except (AttributeError, OSError, ValueError):  # no descriptor to wait on (io.UnsupportedOperation is an OSError)
        time.sleep(0.001)


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
    """Serialise an assignment: CSV ``row,col``; NPY the column of each row (−1: unassigned); NPZ
    arrays ``row_ind`` and ``col_ind``; JSON ``{"row_ind": [...], "col_ind": [...]}``."""
    suffix = ".csv" if path == "-" else Path(path).suffix.lower()
    if suffix == ".npz":
        return npz_bytes({"row_ind": np.asarray(rows, dtype=np.int64), "col_ind": np.asarray(cols, dtype=np.int64)})
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


def check_stack_output(path: str, several_shapes: bool) -> None:
    """Refuses an NPY file for the answers of a batch of several shapes (one array per problem),
    which one NPY array cannot hold; called before the solve as well as at the write."""
    if several_shapes and path != "-" and Path(path).suffix.lower() == ".npy":
        raise LapInputError(f"{path}: a batch of problems of several shapes does not fit one NPY array; "
                            "write .npz, .csv or .json")


def stack_assignment_bytes(path: str, col_ind, names=None) -> bytes:
    """Serialise the assignments of a batch, ``col_ind`` (B, n) or, for a ragged batch, a list of
    one array per problem, −1 for an unassigned row: NPY the (B, n) int64 array (not for a ragged
    batch); NPZ one array per problem, named as the input's problems (``names``) or 0 … B−1; CSV
    ``problem,row,col`` (assigned pairs only); JSON ``{"col_ind": [[...], ...]}``."""
    suffix = ".csv" if path == "-" else Path(path).suffix.lower()
    problems = [np.asarray(c, dtype=np.int64) for c in col_ind]
    if suffix == ".npy":
        check_stack_output(path, several_shapes=isinstance(col_ind, list))
        buffer = io.BytesIO()
        np.save(buffer, np.asarray(col_ind, dtype=np.int64))
        return buffer.getvalue()
    if suffix == ".npz":
        return npz_bytes(dict(zip(names if names is not None else map(str, range(len(problems))), problems)))
    if suffix == ".json":
        return (json.dumps({"col_ind": [cols.tolist() for cols in problems]}) + "\n").encode()
    lines = ["problem,row,col"] + [f"{b},{r},{c}" for b, cols in enumerate(problems)
                                   for r, c in zip(np.flatnonzero(cols >= 0).tolist(), cols[cols >= 0].tolist())]
    return ("\n".join(lines) + "\n").encode()


def npz_bytes(arrays: dict) -> bytes:
    """An NPZ archive, every output's: what np.savez writes (a zip of NAME.npy members, stored) for
    ``arrays`` under any names; np.savez takes the keywords ``file`` and ``allow_pickle`` for its
    own, so a problem of an HDF5 group named ``file`` failed and one named ``allow_pickle`` was
    dropped."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)
    return buffer.getvalue()


def members_bytes(path: str, arrays: list[np.ndarray], dataset: str = "costs") -> bytes:
    """A ragged batch's matrices: NPZ arrays named 0 … B−1, or an HDF5 group ``dataset`` of 2-D
    datasets named 0 … B−1 (what ``lap solve`` reads as a batch)."""
    if Path(path).suffix.lower() == ".npz":
        return npz_bytes({str(b): array for b, array in enumerate(arrays)})
    import h5py

    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as handle:
        group = handle.create_group(dataset)
        group.attrs[BATCH_MARK[0]] = BATCH_MARK[1]  # read as a batch even where it holds one matrix
        for b, array in enumerate(arrays):
            group.create_dataset(str(b), data=array)
    return buffer.getvalue()


def json_text(payload, indent: int | None = None) -> str:
    """``payload`` as strict JSON: a float past float64's range (an objective that overflows, a
    tolerance of such costs) as the string "inf", "-inf" or "nan", where json.dumps would write the
    bare Infinity that jq and JavaScript's JSON.parse refuse."""
    def strict(value):
        if isinstance(value, float) and not math.isfinite(value):
            return "nan" if value != value else ("inf" if value > 0 else "-inf")
        if isinstance(value, dict):
            return {key: strict(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [strict(item) for item in value]
        return value

    return json.dumps(strict(payload), indent=indent, allow_nan=False)


def duals_bytes(path: str, u: np.ndarray, v: np.ndarray) -> bytes:
    """Serialise duals: NPZ with arrays ``u`` (rows) and ``v`` (columns), or JSON ``{"u": [...],
    "v": [...]}`` (integers stay exact). Integer duals past int64 (Python ints) go to JSON only:
    NPZ would pickle them."""
    if Path(path).suffix.lower() == ".npz":
        if object in (u.dtype, v.dtype):
            raise LapInputError("these integer duals do not fit int64: write them as .json, which keeps them exact")
        return npz_bytes({"u": u, "v": v})
    return (json_text({"u": u.tolist(), "v": v.tolist()}) + "\n").encode()


def write_bytes(path: str, data: bytes, stdout=None) -> None:
    """Write to ``path`` atomically (a device or pipe in place), or to stdout for ``-`` (or a name of
    it: a link to /dev/stdout must not replace the file stdout writes to)."""
    if path == "-" or stdout_alias(path):
        stream = stdout if stdout is not None else sys.stdout.buffer
        with reporting_write_errors("stdout"):
            write_all(stream, data)
            flush_all(stream)
        return
    with atomic_output(path) as handle:
        handle.write(data)
