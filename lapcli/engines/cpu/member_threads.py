"""The scipy solves of a ragged batch's members, shared between the caller's thread and one helper
thread kept for the process (scipy releases the GIL while it solves).

Each solve still takes the GIL twice, to start and to return, and a thread that finds the other
holding it sleeps: on the 2-core CI machine (a virtual one) it wakes ~25 µs later (median; 50 µs
at p90), and if the other thread's next solve is shorter than that, it has taken the GIL back first
and the sleeper waits on. A member of 1..40 × 1..40 solves in ~7.5 µs on average, so two threads
that both solve such members spend much of their time waking each other: 1000 of them, solves
alone (six processes, medians of 21 calls), took 6.7–7.2 ms split in two halves against 7.3–8.1
ms in one thread. Hence the split below: the members whose work (entries × shorter side) is at
least SHARED_FROM, in order of work, alternate between the two threads, which then meet at the GIL
about a quarter as often; the smaller ones follow in the caller's thread alone: 6.2–6.9 ms
(whole calls with 16³ instead: ~0.1 ms more, with 25³: ~0.3)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

SHARED_FROM = 20 ** 3  # a member's entries × shorter side from which the two threads share it
_HELPERS: dict[int, ThreadPoolExecutor] = {}  # process id -> its helper threads


def helpers(cpus: int) -> ThreadPoolExecutor:
    """The helper threads (one fewer than the ``cpus`` cores), started once per process: a pool
    made per call cost ~0.3 ms, and a new thread's first GIL hand-offs stalled some calls by ~3 ms.
    A forked child has no copy of the parent's threads (its executor would wait for them forever):
    it starts its own."""
    pid = os.getpid()
    if pid not in _HELPERS:
        _HELPERS.clear()
        _HELPERS[pid] = ThreadPoolExecutor(max_workers=max(1, cpus - 1), thread_name_prefix="lapcli-cpu")
    return _HELPERS[pid]


def solve_members(indices: list, matrices: list, rows: np.ndarray, cols: np.ndarray, maximize: bool,
                  answers: list, threads: bool, cpus: int, check=None) -> int:
    """Store scipy's answer to each member ``b`` of ``indices`` (ascending; ``matrices[b]``,
    ``rows[b]`` × ``cols[b]``) in ``answers[b]``: (rows, cols), or the ValueError scipy raised.
    ``threads``: the large members are shared with the helper thread (see the module's docstring).
    ``check``: run before any solve, or with threads by the helper once its share is solved, while
    this thread solves the small members; what it raises is raised here once both are done.
    Returns the threads used."""
    shared: list = []
    if threads and len(indices) > 1:
        index = np.asarray(indices, dtype=np.int64)
        work = rows[index] * cols[index] * np.minimum(rows[index], cols[index])
        large = work >= SHARED_FROM
        if np.count_nonzero(large) > 1:
            shared = index[large][np.argsort(-work[large], kind="stable")].tolist()
            indices = index[~large].tolist()
    if not shared:
        if check is not None:
            check()
        _store(answers, indices, _solved(indices, matrices, maximize))
        return 1
    # alternate in order of work, for equal shares; each share solved in the list's order, which is
    # the order its matrices were made in, mostly: memory read forward (~0.1 ms of 1000 members)
    theirs, mine = sorted(shared[0::2]), sorted(shared[1::2])
    helper = helpers(cpus).submit(_solved, theirs, matrices, maximize, check)
    solved = _solved(mine, matrices, maximize)  # nothing but scipy in either thread meanwhile
    small = _solved(indices, matrices, maximize)
    _store(answers, theirs, helper.result())
    _store(answers, mine, solved)
    _store(answers, indices, small)
    return 2


def _solved(indices: list, matrices: list, maximize: bool, then=None) -> list:
    """scipy's answer to each member, in order; where one raises, every member again, each error
    kept as its answer (errors are named, not hot). ``then``: called after."""
    try:
        solved = [scipy_lsa(matrices[b], maximize) for b in indices]
    except ValueError:
        solved = [_answer(matrices[b], maximize) for b in indices]
    if then is not None:
        then()
    return solved


def _answer(matrix, maximize: bool):
    try:
        return scipy_lsa(matrix, maximize)
    except ValueError as error:  # scipy's own checks: NaN or the wrong infinity, or no finite matching
        return error


def _store(answers: list, indices: list, solved: list) -> None:
    for b, answer in zip(indices, solved):
        answers[b] = answer
