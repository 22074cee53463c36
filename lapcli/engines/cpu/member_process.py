"""One worker process a Python process, which solves part of a ragged batch's members with scipy
while the caller's thread solves the rest (lapcli.engines.cpu.member_threads splits them by
estimated time; lapcli.engines.cpu.member_worker is the worker's program).

Why a process: scipy lets go of the interpreter lock while it solves, but takes it back to start
and to return, and a member of 1..40 × 1..40 solves in ~7.5 µs, less than a sleeping thread takes
to wake for the lock (~25 µs on the 2-core CI machine). Two threads sharing 1000 such members
took 7.1 ms, a plain scipy loop 7.3–7.8; two processes solving 500 each, 3.6–3.8 ms each.

How: the caller writes the worker's members' values end to end into a file both processes map
(in /dev/shm where there is one; removed from the folder as soon as it is made, so whatever ends
either process leaves nothing behind), sends their shapes down a pipe, solves its own share, then
reads the worker's answer (each row's column, in the same file). Each request carries a number the
answer repeats: an answer out of step ends the worker. The worker is started the
second time a process solves a batch that could use it, without waiting for it: the calls use
the threads (lapcli.engines.cpu.member_threads) until it has loaded NumPy and scipy (~0.5 s). It is
a program of its own (lapcli.engines.cpu.member_worker, run isolated on the caller's import
path), not a multiprocessing child, so the caller's main module is never imported again in it.
POSIX only; not used where SIGPIPE kills the process (a write to a dead worker would kill the
caller) nor for shares past WORKER_BYTES_UP_TO; ``LAPCLI_WORKER_PROCESS=0`` turns it off. A worker
that dies, or whose answer a Ctrl-C interrupts, is ended and not started again in that process:
the threads solve from then on. A forked child starts its own.
"""

from __future__ import annotations

import atexit
import json
import mmap
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import threading
from typing import Any

import numpy as np

from .member_values import FLOAT64
from .member_worker import READY, bytes_needed, views

ENVIRONMENT = "LAPCLI_WORKER_PROCESS"  # "0": never start the worker
MAPPED_FROM = 1 << 20  # the shared file's first size in bytes; it doubles as batches need
# A share of more bytes goes to the threads: its members' solves are long enough that the threads
# do not wait on each other, and a small /dev/shm (64 MiB in a Docker container) keeps its room.
WORKER_BYTES_UP_TO = 1 << 25
# The ask that starts the worker: a process's second batch that could use it. A process that
# solves one batch (`lap solve`) never starts it: its imports would take a core from that solve.
START_ON = 2
_WORKERS: dict[int, "Worker"] = {}  # process id -> its worker (a forked child finds its parent's: not its own)
_ASKED: dict[int, int] = {}  # process id -> the asks so far
_STARTING = threading.Lock()
# the worker's program: the caller's import path, then member_worker.main on the shared file
_PROGRAM = ("import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
            "from lapcli.engines.cpu.member_worker import main; main(int(sys.argv[2]))")


class Worker:
    """The worker process, its pipes and the file both map. ``ready`` is set once the worker has
    loaded; ``dead`` once it has failed or ended (it is then never used again)."""

    def __init__(self):
        self.owner = os.getpid()
        folder = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        self.file = tempfile.TemporaryFile(prefix="lapcli-members-", dir=folder)  # no name: nothing to remove
        self.size, self.mapped, self.sequence = 0, None, 0
        environment = dict(os.environ)
        for threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core's worth:
            environment[threads] = "1"  # a BLAS pool's spinning threads would take the caller's core
        # -I: neither the working directory nor PYTHON* variables decide what it imports; the
        # caller's own path does (its working directory as it is now, where the path names it)
        path = [entry or os.getcwd() for entry in sys.path if isinstance(entry, str)]
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-c", _PROGRAM, json.dumps(path), str(self.file.fileno())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=environment,
                pass_fds=(self.file.fileno(),))
        except BaseException:
            self.file.close()
            raise
        self.ready, self.dead, self.busy = threading.Event(), False, threading.Lock()
        threading.Thread(target=self._await_ready, name="lapcli-worker-start", daemon=True).start()

    def _await_ready(self) -> None:
        try:
            greeting = self.process.stdout.read(len(READY))
        except (OSError, ValueError):
            greeting = b""
        if greeting == READY:
            self.ready.set()
        else:
            self.end()

    def usable(self) -> bool:
        return self.ready.is_set() and not self.dead

    def send(self, matrices: list, rows: np.ndarray, cols: np.ndarray, maximize: bool, check_spread: bool,
             exact_side: int = 0) -> None:
        """Lay the members out in the shared file and ask the worker to solve them (member_worker.
        solve_share says what ``check_spread`` and ``exact_side`` ask). Raises OSError
        where the file cannot grow (no room: tmpfs would kill the caller with SIGBUS on a write past
        it, so the room is taken first) or the worker is gone."""
        need = bytes_needed(rows, cols)
        if need > self.size:  # grow the file; the worker maps it again (the request says its size)
            size = max(need, 2 * self.size, MAPPED_FROM)
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(self.file.fileno(), 0, size)
            else:
                self.file.truncate(size)
            self.mapped, self.size = mmap.mmap(self.file.fileno(), size), size
        if self.process.poll() is not None:
            raise OSError("the worker process has ended")
        # 64-bit integers of one dtype go as they are, for the worker to convert (scipy does, a
        # member at a time); anything else as float64
        dtypes = {matrix.dtype for matrix in matrices}
        value_type = next(iter(dtypes)) if len(dtypes) == 1 else FLOAT64
        if not (value_type.kind in "iu" and value_type.itemsize == 8 and value_type.isnative):
            value_type = FLOAT64
        self.mapped.seek(0)
        for matrix in matrices:  # the file's bytes written as they are: faster than one concatenation
            if matrix.dtype != value_type or not matrix.flags.c_contiguous:
                matrix = np.ascontiguousarray(matrix, dtype=value_type)
            self.mapped.write(matrix)
        self.sequence += 1
        pickle.dump((self.sequence, self.size, rows, cols, value_type.str, maximize, check_spread, exact_side),
                    self.process.stdin)
        self.process.stdin.flush()

    def receive(self, rows: np.ndarray, cols: np.ndarray) -> tuple[list, bool, bool, np.ndarray]:
        """(scipy's errors as (member, message), whether a member's spread is refused, whether its
        integers are too wide for scipy (nothing solved), the column of each row of every member,
        −1 where none): the worker's answer to the last request, copied out of the file. Raises
        OSError where the answer is to another request."""
        sequence, errors, refused, inexact = pickle.load(self.process.stdout)
        if sequence != self.sequence:
            raise OSError(f"the worker answered request {sequence}, not {self.sequence}")
        return errors, refused, inexact, views(self.mapped, rows, cols)[1].copy()

    def end(self) -> None:
        """Stop the worker; never used again. A forked child's copy of its parent's worker only
        forgets it (the process is its parent's)."""
        self.dead = True
        if os.getpid() != self.owner:
            return
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for resource in (self.process.stdin, self.process.stdout, self.mapped, self.file):  # the file: ResourceWarning
            try:
                if resource is not None:
                    resource.close()
            except (OSError, BufferError):  # BufferError: a view of the map still held, freed with it
                pass


def worker(start: bool = True) -> Worker | None:
    """This process's worker where it is ready; else None, after starting one (``start``) where
    none was started yet, this is the process's START_ON-th ask, and it can run here."""
    if os.environ.get(ENVIRONMENT, "1") == "0" or _sigpipe_kills():
        return None
    pid = os.getpid()
    found = _WORKERS.get(pid)
    if found is None and start:
        _ASKED[pid] = _ASKED.get(pid, 0) + 1
    if found is None and start and _ASKED[pid] >= START_ON and _may_start():
        with _STARTING:
            found = _WORKERS.get(pid)
            if found is None:
                _WORKERS.clear()  # a forked child's copy of its parent's worker is not its own
                try:
                    found = _WORKERS[pid] = Worker()
                except OSError:  # no temporary file, or no process: the threads solve
                    return None
    return found if found is not None and found.usable() else None


def _may_start() -> bool:
    if os.name != "posix" or not sys.executable:
        return False
    program = os.path.basename(sys.executable).lower()
    return program.startswith(("python", "pypy"))  # not an application that embeds Python


def _sigpipe_kills() -> bool:
    """Whether SIGPIPE is at its default (Python ignores it; some programs restore it), so that a
    write to a worker that has just died would end the caller."""
    return hasattr(signal, "SIGPIPE") and signal.getsignal(signal.SIGPIPE) == signal.SIG_DFL


@atexit.register
def _end_workers() -> None:
    for found in list(_WORKERS.values()):
        found.end()


def solve_share(found: Worker, theirs: list, matrices: list, rows: np.ndarray, cols: np.ndarray,
                maximize: bool, check_spread: bool, exact_side: int, solve_mine,
                solve_here) -> tuple[list, Any, bool | None, bool]:
    """(answers to ``theirs``, ``solve_mine()``'s result, whether the worker refused a spread, or
    None where it did not answer, whether it found integers too wide for scipy and solved none):
    the worker solves ``theirs`` while this thread runs ``solve_mine``. An answer is the column of
    each row (int64, −1: none), or the ValueError scipy raised. Where the worker fails (no room for
    the file, gone, out of step), it is ended and ``solve_here(theirs)`` gives their answers;
    anything raised meanwhile (Ctrl-C) ends it too, since a request may be in flight whose answer
    the next call would read."""
    share_rows, share_cols = rows[theirs], cols[theirs]
    answers = None
    try:
        try:
            found.send([matrices[b] for b in theirs], share_rows, share_cols, maximize, check_spread, exact_side)
            sent = True
        except OSError:
            found.end()
            sent = False
        mine_solved = solve_mine()
        if sent:
            try:
                errors, refused, inexact, col_of_row = found.receive(share_rows, share_cols)
            except (OSError, EOFError, pickle.UnpicklingError):
                found.end()
            else:
                ends = np.cumsum(share_rows).tolist()
                answers = [col_of_row[end - count:end] for end, count in zip(ends, share_rows.tolist())]
                for k, message in errors:
                    answers[k] = ValueError(message)
    except BaseException:
        found.end()
        raise
    if answers is None:  # this thread solves them; the caller checks them
        return solve_here(theirs), mine_solved, None, False
    return answers, mine_solved, refused, inexact
