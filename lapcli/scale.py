"""Scale-out through Dask: many problems spread over the workers of a Dask cluster.

This module only schedules; the solving is ``lapcli.solve`` (a 2-D matrix) and
``lapcli.solve_batch`` (a 3-D stack), called unchanged on the workers. Each input is one task
(``client.submit``); dask-cuda's ``LocalCUDACluster`` gives one worker per visible GPU, a
``distributed.LocalCluster`` of single-threaded processes runs the same tasks on CPUs (CI). A
(B, n, m) dask array is solved lazily: lapcli.scale_array.

Dask is optional (``pip install 'lapcli[dask]'``): importing this module never imports it.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import threading
import time
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .errors import LapInputError, LapTypeError, SolverUnavailable
from .io.formats import split_hdf5_path
from .scale_array import NEEDS_DASK, require_dask, solve_dask_array  # noqa: F401 - lapcli.scale's names

# In-memory inputs above this many bytes are scattered to a worker first; smaller ones travel in
# their task, which the scheduler runs again elsewhere where a worker dies (a scattered input dies
# with its worker: every task of it failed, and other inputs on that worker too).
SCATTER_FROM = 1 << 20
CONNECT_TIMEOUT_S = 10  # a scheduler address that answers nothing fails this soon


@dataclass
class Failed:
    """An input that gave no answer: its position among the inputs, the exception's class name and
    its one-line message. ``bad_input``: the input or options were at fault (the CLI's exit code 2),
    not the problem (infeasible) or the solver (exit code 1)."""

    index: int
    error_type: str
    message: str
    bad_input: bool = False


@dataclass
class Solved:
    """An input that was solved: the Solution (2-D) or BatchSolution (3-D), and the notes of the
    reader (e.g. a skipped CSV header) for a file input."""

    index: int
    solution: Any
    source_notes: list[str] = field(default_factory=list)
    read_ms: float = 0.0  # reading the input: a file on the worker, stdin here (0 for an in-memory input)
    solve_ms: float = 0.0  # the solve call on the worker, from the read array to the answer


def dask_available() -> bool:
    try:
        import dask.array  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def visible_gpus() -> int:
    """How many CUDA devices this process sees (0 without CuPy or a device)."""
    from .cuda.probe import cuda_status

    if not cuda_status()[0]:
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


# ----------------------------------------------------------------------------- the worker's side
def _one_line(error: BaseException) -> str:
    name = type(error).__name__
    if name == "KilledWorker":  # Dask's words name its task key and every worker address
        return "the Dask workers that took it died (each time it was tried)"
    if name in ("CancelledError", "FutureCancelledError"):
        return "its Dask task was cancelled (a worker or the scheduler was lost)"
    text = str(error).strip().splitlines()
    return text[0] if text else name


def _failed(index: int, error: BaseException) -> Failed:
    # lapcli's own input errors only, and a solver this machine cannot run (an option, as run_library_call has it)
    bad_input = isinstance(error, (LapInputError, LapTypeError, SolverUnavailable))
    return Failed(index, type(error).__name__, _one_line(error), bad_input)


def solve_input(index: int, item, options: dict, read_options: dict, as_given: str | None = None) -> Solved | Failed:
    """One task: read ``item`` if it is a file spec, solve it, and turn any failure into Failed.
    ``as_given``: the spec as the caller wrote it (``item`` is its absolute path, which the worker
    reads); notes and messages name the file as given, as the in-process path does."""
    try:
        return _solved_input(index, item, options, read_options, as_given)
    except Exception as error:  # one bad member costs none of the others
        failed = _failed(index, error)
        failed.message = _as_given(failed.message, item, as_given)
        return failed


def _as_given(text: str, item, as_given: str | None) -> str:
    """``text`` naming the file ``item`` (its absolute path) as the caller wrote it, ``as_given``;
    the readers name a file through pathlib, which drops "./" and "//" from the joined path."""
    if as_given is None or not isinstance(item, str):
        return text
    read = split_hdf5_path(item)[0]
    for name in dict.fromkeys((read, str(Path(read)))):
        text = text.replace(name, split_hdf5_path(as_given)[0])
    return text


def _solved_input(index: int, item, options: dict, read_options: dict, as_given: str | None) -> Solved:
    from .io.read import read_matrix_with_info
    from .pipeline import solve, solve_batch

    notes: list[str] = []
    start = time.perf_counter()
    if isinstance(item, (str, os.PathLike)):
        cost, source = read_matrix_with_info(str(item), **read_options)
        notes = [_as_given(note, str(item), as_given) for note in source.notes]
    else:
        cost = item
    read = time.perf_counter()
    ndim = _rank(cost)
    options = dict(options)
    cost_limit = options.pop("cost_limit", None)
    if ndim == 2:
        solution = solve(cost, cost_limit=cost_limit, **options)
    elif ndim == 3:
        if cost_limit is not None:
            raise LapInputError("cost_limit is not supported for stacks: this input is 3-D")
        solution = solve_batch(cost, **options)
    else:
        raise LapInputError(f"input is {ndim}-D: expected a matrix (2-D) or a stack of matrices (3-D)")
    return Solved(index, solution, notes, (read - start) * 1e3, (time.perf_counter() - read) * 1e3)


def _rank(cost) -> int:
    """3 for a stack, or a list or tuple of matrices (an NPZ's or HDF5 group's, or the caller's), as
    solve_batch takes them; else the array's rank (a nested list of numbers: a matrix). Rows that
    differ in length are refused in lapcli's words, not NumPy's "inhomogeneous shape"."""
    try:
        if isinstance(cost, (list, tuple)) and (not cost or np.ndim(cost[0]) == 2):
            return 3
        return np.ndim(cost)
    except ValueError:
        raise LapInputError("input is not a matrix: its rows differ in length") from None


# ----------------------------------------------------------------------------- the client's side
def _nbytes(item) -> int:
    """An in-memory input's size as Dask measures it (a nested list of numbers too), for the choice
    to scatter it."""
    from dask.sizeof import sizeof

    return int(sizeof(item))


@contextmanager
def _client(client, scheduler, n_inputs: int, silence_logs: int = logging.WARNING):
    """The given client, a client of ``scheduler``, or a local cluster started (and closed) here:
    one worker per GPU when several are visible and dask-cuda imports, else CPU processes."""
    distributed = require_dask()
    if client is not None:
        yield client
        return
    if scheduler is not None:
        with _connected(distributed, scheduler) as own:
            yield own
        return
    try:
        cluster = _local_cluster(distributed, n_inputs, silence_logs)
    except Exception as error:  # noqa: BLE001 - Dask's configuration (a DASK_* value it cannot parse)
        raise SolverUnavailable(f"cannot start a local Dask cluster: {_one_line(error)}") from None
    with cluster, distributed.Client(cluster) as own:
        yield own


def _local_cluster(distributed, n_inputs: int, silence_logs: int):
    """One worker per GPU when several are visible and dask-cuda imports, else single-threaded CPU
    processes, one per input up to the cores."""
    if visible_gpus() > 1:
        try:
            from dask_cuda import LocalCUDACluster
        except ImportError:
            pass
        else:
            return LocalCUDACluster(silence_logs=silence_logs)
    workers = max(1, min(os.cpu_count() or 1, n_inputs))
    with _workers_ignore_ctrl_c():
        return distributed.LocalCluster(n_workers=workers, processes=True, threads_per_worker=1,
                                        dashboard_address=":0", silence_logs=silence_logs)


@contextmanager
def _workers_ignore_ctrl_c():
    """SIGINT ignored while a local cluster starts its worker processes, which inherit that: a
    Ctrl-C reaches the terminal's whole process group, and each worker printed its
    KeyboardInterrupt traceback; the caller's interrupt closes the cluster (its context manager).
    Only from the main thread, where Python lets a handler be set."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _connected(distributed, scheduler: str):
    """A client of ``scheduler``, or LapInputError. Client's timeout bounds the connection alone: a
    service that takes it and never answers held the call for ever, and one that answers something
    else (an HTTP server) failed as "out of host memory"; the handshake runs in a thread, given twice
    CONNECT_TIMEOUT_S, and whatever it raises is one line. A scheduler with no worker is given
    CONNECT_TIMEOUT_S for one to join."""
    found: dict = {}

    def connect() -> None:
        try:
            found["client"] = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT_S)
        except BaseException as error:  # noqa: BLE001 - reported below, in the caller's thread
            found["error"] = error

    thread = threading.Thread(target=connect, name="lapcli-dask-connect", daemon=True)
    thread.start()
    thread.join(2 * CONNECT_TIMEOUT_S)
    if "client" in found:
        client = found["client"]
        try:  # a scheduler with no worker held the call for ever (as_completed waits for one)
            client.wait_for_workers(1, timeout=CONNECT_TIMEOUT_S)
        except Exception:  # noqa: BLE001 - distributed's TimeoutError, whichever module it comes from
            client.close()
            raise LapInputError(f"the Dask scheduler at {scheduler} has no worker: none joined in "
                                f"{CONNECT_TIMEOUT_S} s") from None
        return client
    error = found.get("error")
    why = (f"no answer in {2 * CONNECT_TIMEOUT_S} s" if error is None else  # a length read off another protocol:
           "what it answers is not Dask's protocol" if isinstance(error, MemoryError) else _one_line(error))
    raise LapInputError(f"cannot reach the Dask scheduler at {scheduler}: {why}")


def _absolute_spec(item) -> str:
    """A file spec as the caller's absolute path (``FILE.h5:/path`` keeps its tail): a worker reads it
    in its own folder, where a relative name is another file or none. Joined, not normalised: in
    ``link/../x.npy`` the system follows the link before "..", which abspath drops as text (another x.npy)."""
    text = os.fspath(item)
    path, inner = split_hdf5_path(text)
    if os.path.isabs(path):
        return text  # as given: already the same file for every worker
    return os.path.join(os.getcwd(), path) + ("" if inner is None else ":" + inner)


def solve_inputs(inputs: Sequence, *, client=None, scheduler: str | None = None, solver: str = "auto",
                 maximize: bool = False, dtype: str | None = None, timeout: float | None = None,
                 cost_limit: float | None = None, read_options: dict | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 certify: bool | None = None, silence_logs: int = logging.WARNING) -> list[Solved | Failed]:
    """:func:`solve_many`, keeping each input's reader notes apart (``Solved``): what the CLI prints.
    ``silence_logs``: the least level a local cluster started here logs (the CLI: CRITICAL, its
    stderr is one line an input)."""
    distributed = require_dask()
    if (isinstance(inputs, (str, bytes, os.PathLike, dict)) or hasattr(inputs, "ndim")
            or not isinstance(inputs, Iterable)):  # one input (a matrix or stack of any library, a path), or a mapping
        raise LapInputError(f"inputs must be a list of inputs (matrices, stacks or file specs), not one "
                            f"{type(inputs).__name__}: a stack is solve_batch's, a file [path]")
    if client is not None and scheduler is not None:  # the scheduler was ignored
        raise LapInputError("give client= or scheduler=, not both")
    inputs = list(inputs)
    options = dict(solver=solver, maximize=maximize, dtype=dtype, timeout=timeout, certify=certify)
    if cost_limit is not None:
        options["cost_limit"] = cost_limit
    read_options = dict(read_options or {})
    total = len(inputs)
    if total == 0:
        return []
    with _client(client, scheduler, total, silence_logs) as active:
        results: list = [None] * total
        position = {}  # future key -> input index
        futures = []
        done = 0
        from .io.read import read_matrix_with_info

        stdin_notes = {}  # input index -> (the reader's notes of stdin, read here, and its ms)
        for index, item in enumerate(inputs):
            as_given = os.fspath(item) if isinstance(item, (str, os.PathLike)) else None
            try:
                if as_given == "-":  # the caller's stdin, read here: a worker's own is empty or another's
                    began = time.perf_counter()
                    item, source = read_matrix_with_info("-", **read_options)
                    as_given, stdin_notes[index] = None, (source.notes, (time.perf_counter() - began) * 1e3)
                if as_given is not None:
                    item = _absolute_spec(item)
                elif _nbytes(item) > SCATTER_FROM:  # travels once, not inside the graph; a small input
                    # rides in its task, which the scheduler can run again where a worker dies
                    item = active.scatter([item], hash=False)[0]  # (a list as one object: a batch)
                future = active.submit(solve_input, index, item, options, read_options, as_given, pure=False)
            except Exception as error:  # this input cannot reach a worker: it alone fails
                root = error
                while root.__cause__ or root.__context__:  # Dask wraps pickle's words in its own
                    root = root.__cause__ or root.__context__
                if isinstance(root, (TypeError, pickle.PicklingError)) and not isinstance(error, LapTypeError):
                    # it cannot be pickled: bad input
                    error = LapInputError(f"input {index} cannot be sent to a worker: {_one_line(root)}")
                results[index] = _failed(index, error)  # else (the connection, a timeout) as it is
                done += 1
                if progress is not None:
                    progress(done, total)
                continue
            position[future.key] = index
            futures.append(future)
        # with_results: the client fetches each result as its task ends, concurrently, instead of
        # one round trip per result from this thread after the fact (~1 ms each, serial)
        for future, result in distributed.as_completed(futures, with_results=True, raise_errors=False):
            index = position[future.key]
            if future.status == "finished":
                results[index] = result
            else:  # the task itself failed (a worker died, an argument could not be unpickled) or was cancelled
                results[index] = _failed(index, result[1] if isinstance(result, tuple) else result)
            done += 1
            if progress is not None:
                progress(done, total)
        for index, (notes, read_ms) in stdin_notes.items():
            if isinstance(results[index], Solved):
                results[index].source_notes, results[index].read_ms = notes, read_ms
        return results


def solve_many(inputs: Sequence, *, client=None, scheduler: str | None = None, solver: str = "auto",
               maximize: bool = False, dtype: str | None = None, timeout: float | None = None,
               cost_limit: float | None = None, read_options: dict | None = None,
               progress: Callable[[int, int], None] | None = None, certify: bool | None = None) -> list:
    """Solve every input on the workers of a Dask cluster; the results in input order.

    Parameters
    ----------
    inputs : sequence
        Cost matrices (2-D), stacks (3-D, solved by ``solve_batch``) or file specs (str paths, read
        on the workers by ``lapcli.io.read.read_matrix``: the workers must see the same files; ``"-"``,
        stdin, is read here). Each input is one task.
    client : distributed.Client, optional
        Use this cluster. ``scheduler``: the address of one (``Client(scheduler)``). Neither: a
        local cluster is started and closed here: dask-cuda's ``LocalCUDACluster`` (one worker per
        GPU) when more than one GPU is visible and dask-cuda imports, else a ``LocalCluster`` of
        min(CPUs, inputs) single-threaded processes.
    solver, maximize, dtype, timeout, cost_limit, certify
        As ``lapcli.solve`` (``cost_limit``: 2-D inputs only).
    read_options : dict, optional
        ``dataset``, ``header``, ``index_col`` for ``read_matrix``.
    progress : callable, optional
        ``progress(done, total)``, called each time an input finishes.

    Returns
    -------
    list
        Per input, in order: a ``Solution`` (2-D), a ``BatchSolution`` (3-D), or ``Failed`` (its
        index, exception class and message) for an input that gave no answer. One failure never
        raises and costs none of the others.
    """
    results = solve_inputs(inputs, client=client, scheduler=scheduler, solver=solver, maximize=maximize,
                           dtype=dtype, timeout=timeout, cost_limit=cost_limit, read_options=read_options,
                           progress=progress, certify=certify)
    out = []
    for result in results:
        if isinstance(result, Solved):
            result.solution.report.notes.extend(result.source_notes)
            out.append(result.solution)
        else:
            out.append(result)
    return out
