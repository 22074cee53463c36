"""One worker process a Python process, which solves half of a ragged batch's small members with
scipy while the caller's thread solves the other half (lapcli.engines.cpu.member_worker is its
program).

Why a process: scipy lets go of the interpreter lock while it solves, but takes it back to start
and to return, and a member of 1..40 × 1..40 solves in ~7.5 µs, less than a sleeping thread takes
to wake for the lock (~25 µs on the 2-core CI machine). Two threads sharing 1000 such members
took 7.1 ms, a plain scipy loop 7.3–7.8; two processes solving 500 each, 3.6–3.8 ms each.

How: the caller writes the worker's members' values end to end into a file both processes map
(in /dev/shm where there is one), sends their shapes down a pipe, solves its own share, then reads
the worker's answer (each row's column, in the same file). The worker is started the
second time a process solves a batch that could use it, without waiting for it: the calls use
the threads (lapcli.engines.cpu.member_threads) until it has loaded NumPy and scipy (~0.5 s). It is
the program ``python -m lapcli.engines.cpu.member_worker``, not a multiprocessing child, so the
caller's main module is never imported again in it. POSIX only; ``LAPCLI_WORKER_PROCESS=0`` turns
it off. A worker that dies, or whose answer a Ctrl-C interrupts, is ended and not started again in
that process: the threads solve from then on. A forked child starts its own.
"""

from __future__ import annotations

import atexit
import mmap
import os
import pickle
import subprocess
import sys
import tempfile
import threading
from typing import Any

import numpy as np

from .member_worker import READY, bytes_needed, views

ENVIRONMENT = "LAPCLI_WORKER_PROCESS"  # "0": never start the worker
MAPPED_FROM = 1 << 20  # the shared file's first size in bytes; it doubles as batches need
_WORKERS: dict[int, "Worker"] = {}  # process id -> its worker (a forked child finds its parent's: not its own)
# The ask that starts the worker: a process's second batch that could use it. A process that
# solves one batch (`lap solve`) never starts it: its imports would take a core from that solve.
START_ON = 2
_ASKED: dict[int, int] = {}  # process id -> the asks so far
_STARTING = threading.Lock()


class Worker:
    """The worker process, its pipes and the file both map. ``ready`` is set once the worker has
    loaded; ``dead`` once it has failed (it is then never used again)."""

    def __init__(self):
        folder = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
        descriptor, self.path = tempfile.mkstemp(prefix="lapcli-members-", dir=folder)
        self.file = os.fdopen(descriptor, "r+b")
        self.size, self.mapped = 0, None
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
        environment = dict(os.environ)
        environment["PYTHONPATH"] = os.pathsep.join(filter(None, (package_root, os.environ.get("PYTHONPATH"))))
        for threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):  # one core's worth:
            environment[threads] = "1"  # a BLAS pool's spinning threads would take the caller's core
        self.process = subprocess.Popen([sys.executable, "-m", "lapcli.engines.cpu.member_worker"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        env=environment, close_fds=True)
        self.ready, self.dead, self.busy = threading.Event(), False, threading.Lock()
        threading.Thread(target=self._await_ready, name="lapcli-worker-start", daemon=True).start()
        atexit.register(self.end)

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

    def send(self, matrices: list, rows: np.ndarray, cols: np.ndarray, maximize: bool, check_spread: bool) -> None:
        """Lay the members out in the shared file and ask the worker to solve them."""
        need = bytes_needed(rows, cols)
        if need > self.size:  # grow the file; the worker maps it again (the request says its size)
            self.size = max(need, 2 * self.size, MAPPED_FROM)
            self.file.truncate(self.size)
            self.mapped = mmap.mmap(self.file.fileno(), self.size)
        self.mapped.seek(0)
        for matrix in matrices:  # the file's bytes written as they are: faster than one concatenation
            if matrix.dtype != np.float64 or not matrix.flags.c_contiguous:
                matrix = np.ascontiguousarray(matrix, dtype=np.float64)
            self.mapped.write(matrix)
        pickle.dump((self.path, self.size, rows, cols, maximize, check_spread), self.process.stdin)
        self.process.stdin.flush()

    def receive(self, rows: np.ndarray, cols: np.ndarray) -> tuple[list, bool, np.ndarray]:
        """(scipy's errors as (member, message), whether a member's spread is refused, the column of
        each row of every member, −1 where none): the worker's answer to the last request, copied
        out of the file."""
        errors, refused = pickle.load(self.process.stdout)
        return errors, refused, views(self.mapped, rows, cols)[1].copy()

    def end(self) -> None:
        """Stop the worker (closing its input ends it) and remove the file; never used again."""
        self.dead = True
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.unlink(self.path)
        except OSError:
            pass


def worker(start: bool = True) -> Worker | None:
    """This process's worker where it is ready; else None, after starting one (``start``) where
    none was started yet, this is the process's START_ON-th ask, and it can run here."""
    if os.environ.get(ENVIRONMENT, "1") == "0":
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


def solve_share(found: Worker, theirs: list, matrices: list, rows: np.ndarray, cols: np.ndarray,
                maximize: bool, check_spread: bool, solve_mine, solve_here) -> tuple[list, Any, bool | None]:
    """(answers to ``theirs``, ``solve_mine()``'s result, whether the worker refused a spread):
    the worker solves ``theirs`` while this thread runs ``solve_mine``. An answer is the column of
    each row (int64, −1: none), or the ValueError scipy raised. Where the worker fails, the worker
    is ended and ``solve_here(theirs)`` gives their answers (refused: None, not checked); an
    interruption ends it too (its answer would be read by the next call)."""
    share_rows, share_cols = rows[theirs], cols[theirs]
    try:
        found.send([matrices[b] for b in theirs], share_rows, share_cols, maximize, check_spread)
        sent = True
    except (OSError, ValueError):
        found.end()
        sent = False
    try:
        mine_solved = solve_mine()
    except BaseException:
        found.end()  # its answer would be read by the next call
        raise
    if sent:
        try:
            errors, refused, col_of_row = found.receive(share_rows, share_cols)
        except (OSError, EOFError, pickle.UnpicklingError):
            found.end()
            sent = False
        except BaseException:
            found.end()
            raise
    if not sent:  # this thread solves them; the caller checks the spread as without a worker
        return solve_here(theirs), mine_solved, None
    ends = np.cumsum(share_rows).tolist()
    answers = [col_of_row[end - count:end] for end, count in zip(ends, share_rows.tolist())]
    for k, message in errors:
        answers[k] = ValueError(message)
    return answers, mine_solved, refused
