"""Where an output goes, checked before any work: a file whose folder can take it, or a device or
pipe written in place; and whether two outputs are one (the same file, or stdout under two names),
so that the second written would not silently replace the first."""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from ..errors import LapInputError, LapOutputError
from .formats import HDF5_SUFFIXES


def is_device(path: str) -> bool:
    """An existing character device or pipe (``/dev/null``, ``/dev/stdout``, a FIFO): written in
    place, as CSV/JSON like stdout, not through a temporary file and a rename."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _device_kind(path: str) -> str:
    return "a pipe" if stat.S_ISFIFO(os.stat(path).st_mode) else "a device"


def written_to(path: str) -> Path:
    """Where a write to ``path`` lands: through a symbolic link, to its file (a new file renamed
    over the link would replace the link)."""
    return Path(os.path.realpath(path))


def check_output_path(path: str, suffixes: tuple[str, ...], what: str) -> None:
    """Fail before any work when an output could not be written."""
    target = Path(path)
    suffix = target.suffix.lower()
    device = is_device(path)  # written in place: a pipe or device named with an extension takes that format
    if path == "-" or (not suffix and (device or stream_alias(path))):  # /dev/null, /dev/stdout, stdout a file
        return
    if suffix not in suffixes:
        head = re.match(r"(.*?(\.[^./:]+)):", path)  # 'r.npy:/x' or 'r.npz:': a dataset after a file of no datasets
        if head and head[2].lower() in suffixes and head[2].lower() not in HDF5_SUFFIXES:
            takes = ("only an HDF5 file (.h5, .hdf5) takes a" if set(HDF5_SUFFIXES) & set(suffixes)
                     else f"{'an' if what[0] in 'aeiou' else 'a'} {what} file takes no")
            raise LapInputError(f"cannot write {path}: {takes} dataset after ':'; give {head[1]}")
        raise LapInputError(f"unknown {what} extension {suffix or '(none)'!r}; use one of {', '.join(suffixes)}")
    if suffix in HDF5_SUFFIXES and (alias := stream_alias(path) or (_device_kind(path) if device else None)):
        # written in place, where HDF5 cannot seek back
        raise LapInputError(f"cannot write {target}: it is {alias}, where an HDF5 file cannot be written; give a file")
    if device:
        return
    if os.path.basename(path) in ("", ".", ".."):  # Path() drops them: "a.csv/" or "a.csv/." is a folder
        raise LapInputError(f"cannot write {path}: it names a folder, not a file")
    written = written_to(path)
    folder = written.parent if str(written.parent) else Path(".")
    if not folder.is_dir():
        what = f"{folder} is a file, not a folder" if folder.exists() else f"folder {folder} does not exist"
        raise LapInputError(f"cannot write {target}: {what}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise LapInputError(f"cannot write {target}: folder {folder} is not writable")
    try:
        if target.is_dir():
            raise LapInputError(f"cannot write {target}: it is a directory")
    except OSError as error:  # a name past the file system's 255 bytes: "File name too long"
        raise LapInputError(f"cannot write {target}: {error.strerror or error}") from None
    _check_folder_takes_a_file(target, folder)


def _check_folder_takes_a_file(target: Path, folder: Path) -> None:
    """Make and remove an empty file where the output's temporary will go (lapcli.io.write): access()
    answers yes for root anywhere, and for a read-only mount or /proc, which refused the output
    only after the work. A full disk, a quota or an I/O error is no bad input (LapOutputError)."""
    import errno

    try:
        fd, name = new_temporary(target, folder)
    except OSError as error:
        refused = LapOutputError if error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO) else LapInputError
        raise refused(f"cannot write {target}: {error.strerror or error}") from None
    os.close(fd)
    os.unlink(name)


def new_temporary(target: Path, folder: Path) -> tuple[int, str]:
    """(fd, name) of a new empty file in ``folder``, named for ``target`` (an output is written under
    it, then renamed: lapcli.io.write). The name keeps ``target``'s first 200 bytes, leaving room for
    mkstemp's 8 characters and ".part" in the 255 bytes a file name may take (a valid name of 250
    was refused as "File name too long"). OSError where the folder takes no file."""
    import tempfile

    prefix = "." + os.fsencode(target.name)[:200].decode(errors="ignore") + "."
    return tempfile.mkstemp(prefix=prefix, suffix=".part", dir=folder)


def check_room(path: str, values: int, dtype: str) -> None:
    """Fail before any work where ``path``'s file system has no room for ``values`` numbers of
    ``dtype`` (CSV: a digit and a comma each at least): a stack of 10^14 problems would start
    writing petabytes."""
    if path == "-" or is_device(path) or stream_alias(path):
        return
    import numpy as np

    size = values * (2 if path.lower().endswith(".csv") else np.dtype(dtype).itemsize)
    try:  # (the file it replaces stays until the new one is complete: its room is not free)
        usage = shutil.disk_usage(written_to(path).parent)
    except OSError:  # nothing to ask: the write says what goes wrong
        return
    free = usage.free
    if usage.total and size > free:  # (a total of 0: /proc and the like, which say nothing)
        raise LapInputError(f"cannot write {path}: it takes at least {_bytes(size)}, and its file system has "
                            f"{_bytes(free)} free")


def _bytes(count: int) -> str:
    """A size in words: PB, TB, GB, MB or bytes."""
    units = ((1e15, "PB"), (1e12, "TB"), (1e9, "GB"), (1e6, "MB"))
    return next((f"{count / unit:,.1f} {name}" for unit, name in units if count >= unit), f"{count:,} bytes")


def same_output(first: str, second: str) -> bool:
    """Whether two outputs name one file, so that the second written would replace the first: one
    path (through links or not), or stdout twice (``-``, or a path to what descriptor 1 is:
    ``/dev/stdout``, its pipe or file: two documents one after the other). /dev/null takes both."""
    if "-" in (first, second):
        other = second if first == "-" else first
        return first == second or (os.path.realpath(other) != os.devnull and names_stdout(other))
    if names_stdout(first) and names_stdout(second):  # /dev/stdout and /dev/fd/1, its pipe or file
        return os.path.realpath(first) != os.devnull  # (stdout to /dev/null takes both)
    if is_device(first) or is_device(second):
        return False
    if os.path.realpath(first) == os.path.realpath(second):
        return True
    try:
        return os.path.samefile(first, second)  # hard links to one file
    except OSError:  # one of them does not exist yet: two paths, two files
        return False


def names_stdout(path: str) -> bool:
    """``path`` names descriptor 1: by its name, or as the pipe or file it is, stderr's names aside. A
    terminal is not told by its file (stderr shares it: ``-o /dev/tty --json`` writes where it says)."""
    named = os.path.abspath(path)
    if named in ("/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"):
        return True
    if named in ("/dev/stderr", "/dev/fd/2", "/proc/self/fd/2"):  # asked for by name, merged with 2>&1 or not
        return False
    try:
        mode = os.stat(path).st_mode
        return not stat.S_ISCHR(mode) and os.path.samestat(os.stat(path), os.fstat(1))
    except OSError:  # no such file yet, or descriptor 1 closed
        return False


def stdout_alias(path: str) -> bool:
    """A name of descriptor 1 other than its file's own (a link to /dev/stdout, /dev/stdout itself):
    written as stdout, in place, where a new file renamed over it would replace what stdout holds.
    A plain path to that file is written as any file."""
    return _another_name(path) and names_stdout(path)


def stream_alias(path: str) -> str | None:
    """"stdout" or "stderr" where ``path`` is another name of descriptor 1 or 2 (/dev/stdout,
    /dev/stderr, a link to one) and its file no terminal: written through that stream, in place,
    where a new file renamed over it would replace what the stream holds; None for other paths."""
    if stdout_alias(path):
        return "stdout"
    try:
        mode = os.stat(path).st_mode
        stderr = _another_name(path) and not stat.S_ISCHR(mode) and os.path.samestat(os.stat(path), os.fstat(2))
        return "stderr" if stderr else None
    except OSError:  # no such file, or descriptor 2 closed
        return None


def _another_name(path: str) -> bool:
    """A link, or a name under /dev or /proc: possibly another name of a descriptor's file."""
    return os.path.islink(path) or os.path.abspath(path).startswith(("/dev/", "/proc/"))


def is_stdin_file(path: str) -> bool:
    """``path`` is the regular file descriptor 0 reads (``lap solve - < m.csv -o m.csv``)."""
    try:
        read = os.fstat(0)
        return stat.S_ISREG(read.st_mode) and os.path.samestat(os.stat(path), read)
    except OSError:  # no such file yet, or descriptor 0 closed
        return False


def check_keeps_hdf5_objects(path: str, dataset: str) -> None:
    """Refuse to write ``path`` anew where it is an HDF5 file holding what the new file would not:
    objects (links included) besides ``dataset``, what lies in it and the groups above it, or
    attributes of those groups."""
    if not os.path.isfile(path):
        return
    import h5py

    mine = dataset.strip("/")
    try:
        with h5py.File(path, "r") as existing:
            others = [f"/{name}" for name, group in _hdf5_links(existing, h5py)
                      if not (name == mine or name.startswith(mine + "/") or (mine.startswith(name + "/") and group))]
            for name in ["", *_ancestors(mine)]:  # the new file's groups above the dataset get none
                group = existing.get(name or "/")
                if isinstance(group, h5py.Group) and group.attrs:
                    others.append(f"the attributes of /{name}")
    except OSError:  # not an HDF5 file: an output like any other
        return
    if others:
        listed = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise LapInputError(f"{path} holds {listed}, which a new file would not: write to another file, "
                            "or remove it first")


def _hdf5_links(group, h5py, prefix: str = ""):
    """(name, is a group reached by a hard link) for every link under ``group``, soft and external
    ones too (h5py's visit lists neither)."""
    for key in group:
        name, link = prefix + key, group.get(key, getlink=True)
        hard_group = isinstance(link, h5py.HardLink) and isinstance(group.get(key), h5py.Group)
        yield name, hard_group
        if hard_group:
            yield from _hdf5_links(group[key], h5py, name + "/")


def _ancestors(name: str) -> list[str]:
    """The groups above ``name`` ("a/b/c": "a", "a/b")."""
    parts = name.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]
