"""The scipy solves of a ragged batch's members, shared between the caller's thread and the worker
process where it is ready (lapcli.engines.cpu.member_process: half the members each, by estimated
time), else one helper thread kept for the process (scipy releases the GIL while it solves).

Each solve still takes the GIL twice, to start and to return, and a thread that finds the other
holding it sleeps: on the 2-core CI machine (a virtual one) it wakes ~25 µs later (median; 50 µs
at p90), and if the other thread's next solve is shorter than that, it has taken the GIL back first
and the sleeper waits on. A member of 1..40 × 1..40 solves in ~7.5 µs on average, so two threads
that both solve such members spend much of their time waking each other: 1000 of them, solves
alone (six processes, medians of 21 calls), took 6.7–7.2 ms split in two halves against 7.3–8.1
ms in one thread. Hence the split below: the members whose work (entries × shorter side) is at
least SHARED_FROM, in order of work, alternate between the two threads, which then meet at the GIL
about a quarter as often; the smaller ones follow in the caller's thread alone: 6.2–6.9 ms
(whole calls with 16³ instead: ~0.1 ms more, with 25³: ~0.3). Two processes do not meet at
all: 500 members each took 3.6–3.8 ms."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...errors import LapInputError
from ...float64_exact import float64_exact_dtype
from ...work import SPREAD_OVERFLOWS
from .member_values import check_float_spread, integers_exact, scipy_answers

# _worker_split's estimates, µs (2-core CI machine): a member's solve, the worker's extra a member
# and its late start (with the tall members given to the worker, 900 beat 300 and 600 on 1000 members
# of 1..40 × 1..40: the worker scatters their columns; a batch of less than ~1 ms of solves stays
# in this thread)
SOLVE_US, ENTRY_US = 0.6, 0.026
WORKER_EXTRA_US, WORKER_START_US = 1.0, 900.0
SHARED_FROM = 20 ** 3  # a member's entries × shorter side from which the two threads share it
# A list is shared at all (sharing_pays) from MEMBERS_SHARED_FROM members of SHARED_MEAN_ENTRIES
# entries on average and SHARED_ENTRIES in all. Sharing costs work a member (the split, the worker's
# copy, views and answers) about a small member's solve, which the second core pays back only where
# the members are larger and many. 2-core CI machine, float64 U[0, 1) members of 1..S × 1..S, ms,
# scipy loop / lapcli's loop (lapcli.engines.cpu.scipy_loop) / shared with the worker: 1000 × 1..8
# (21 entries on average) 1.22 / 1.90 / 2.91; 10000 × 1..8 13.0 / 20.0 / 22.0; 4000 × 1..12 (42)
# 6.89 / 9.87 / 10.2; 2000 × 1..16 (73) 4.50 / 6.37 / 6.21; 3000 × 1..16 7.0–7.3 / 10.1 / 9.4–9.6
# (whole calls); 1000 × 1..20 (114) 2.98 / 4.07 / 3.98; 1000 × 1..24 (162) 3.76 / 4.96 / 4.41;
# 300 × 1..30 (258) 1.59 / 2.04 / 2.20; 1000 × 1..30 5.21 / 6.70 / 5.48.
MEMBERS_SHARED_FROM, SHARED_MEAN_ENTRIES, SHARED_ENTRIES = 256, 64, 150_000
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


def sharing_pays(count: int, entries: int, cpus: int) -> bool:
    """Whether ``count`` members of ``entries`` in all are shared with the worker process or the
    helper thread (solve_members' ``threads``) rather than solved in the caller's thread alone."""
    return cpus > 1 and count >= MEMBERS_SHARED_FROM and entries >= max(SHARED_ENTRIES, SHARED_MEAN_ENTRIES * count)


def solve_members(indices: list, matrices: list, rows: np.ndarray, cols: np.ndarray, maximize: bool,
                  answers: list, threads: bool, cpus: int, check_spread: bool = False,
                  verify_integers: bool = False) -> tuple[int, bool, bool]:
    """Store scipy's answer to each member ``b`` of ``indices`` (ascending; ``matrices[b]``,
    ``rows[b]`` × ``cols[b]``) in ``answers[b]``: (rows, cols), or the ValueError scipy raised.
    ``threads``: part of the members go to the worker process where it is ready (split by
    estimated time: _worker_split; lapcli.engines.cpu.member_process), else the large members are
    shared with the helper thread (see the module's docstring). ``check_spread``: refuse float
    members whose row spreads float64 cannot hold (lapcli.engines.cpu.member_values.
    check_float_spread), raised once every member is solved. ``verify_integers``: the members are
    integers of one dtype not checked yet that float64 holds them exactly (lapcli.engines.cpu.
    member_values.integers_exact): each process checks its own share, and where one is too wide
    the answers are not stored. Returns (the threads used, whether the worker process answered for
    a share, whether integers were too wide)."""
    from . import member_process

    found = member_process.worker() if threads and len(indices) > 1 else None
    theirs, mine = _worker_split(np.asarray(indices, dtype=np.int64), rows, cols) if found else ([], indices)
    room = 8 * int((rows[theirs] * (cols[theirs] + 1)).sum()) <= member_process.WORKER_BYTES_UP_TO if theirs else False
    if room and found.busy.acquire(blocking=False):  # else too little work or too much, or another thread has it
        try:
            answered, inexact = _with_worker(found, theirs, mine, matrices, rows, cols, maximize, answers,
                                             check_spread, verify_integers)
            return 2, answered, inexact
        finally:
            found.busy.release()
    if verify_integers and not integers_exact([matrices[b] for b in indices], rows[indices], cols[indices]):
        return 1, False, True
    shared: list = []
    if threads and len(indices) > 1:
        index = np.asarray(indices, dtype=np.int64)
        work = rows[index] * cols[index] * np.minimum(rows[index], cols[index])
        large = work >= SHARED_FROM
        if np.count_nonzero(large) > 1:
            shared = index[large][np.argsort(-work[large], kind="stable")].tolist()
            indices = index[~large].tolist()
    check = (lambda: check_float_spread([matrices[b] for b in [*shared, *indices]])) if check_spread else None
    if not shared:
        if check is not None:
            check()
        _store(answers, indices, solved_here(indices, matrices, maximize))
        return 1, False, False
    # alternate in order of work, for equal shares; each share solved in the list's order, which is
    # the order its matrices were made in, mostly: memory read forward (~0.1 ms of 1000 members)
    theirs, mine = sorted(shared[0::2]), sorted(shared[1::2])
    helper = helpers(cpus).submit(solved_here, theirs, matrices, maximize, check)
    solved = solved_here(mine, matrices, maximize)  # nothing but scipy in either thread meanwhile
    small = solved_here(indices, matrices, maximize)
    _store(answers, theirs, helper.result())
    _store(answers, mine, solved)
    _store(answers, indices, small)
    return 2, False, False


def _with_worker(found, theirs: list, mine: list, matrices: list, rows: np.ndarray, cols: np.ndarray,
                 maximize: bool, answers: list, check_spread: bool, verify_integers: bool) -> tuple[bool, bool]:
    """solve_members with the worker process: it checks ``theirs`` and solves them; this thread
    checks ``mine`` and solves them. Returns (whether the worker answered, else this thread solved
    its share too; whether integers were too wide: nothing stored then)."""
    from .member_process import solve_share

    indices = theirs + mine
    side = int(max(rows[indices].max(), cols[indices].max()))
    exact_side = side if verify_integers and not float64_exact_dtype(matrices[indices[0]].dtype, side) else 0

    def solve_mine():  # (answers, spreads refused, integers too wide): raised once the worker answered
        if exact_side and not integers_exact([matrices[b] for b in mine], rows[mine], cols[mine]):
            return [], False, True
        solved = solved_here(mine, matrices, maximize)
        try:
            if check_spread:
                check_float_spread([matrices[b] for b in mine])
        except LapInputError:
            return solved, True, False
        return solved, False, False

    theirs_solved, (mine_solved, refused_here, inexact_here), refused, inexact = solve_share(
        found, theirs, matrices, rows, cols, maximize, check_spread, exact_side, solve_mine,
        lambda share: solved_here(share, matrices, maximize))
    if refused is None:  # the worker failed and this thread solved its share: check it here
        inexact = bool(exact_side) and not integers_exact([matrices[b] for b in theirs], rows[theirs], cols[theirs])
        if check_spread:
            check_float_spread([matrices[b] for b in theirs])
    if refused or refused_here:
        raise LapInputError(SPREAD_OVERFLOWS)
    if inexact or inexact_here:
        return refused is not None, True
    _store(answers, theirs, theirs_solved)
    _store(answers, mine, mine_solved)
    return refused is not None, False


def _worker_split(index: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> tuple[list, list]:
    """(the worker's members, this thread's), each ascending, of about equal time: the tall members
    (more rows than columns) to the worker, which returns each row's column, the others here,
    whose scipy columns need nothing more (a tall member's answer here would be scattered
    afterwards: lapcli.engines.cpu.member_answers); then the shortest members of the side ahead
    move over until neither is. A member of r × c entries solves in about SOLVE_US + ENTRY_US·r·c
    µs (scipy, random floats, 1 to 40 a side); in the worker it costs WORKER_EXTRA_US more (its
    view, its answer's copy), and the worker starts WORKER_START_US late (the caller writes its
    members first)."""
    costs = SOLVE_US + ENTRY_US * (rows[index] * cols[index]).astype(np.float64)
    tall = rows[index] > cols[index]
    order = np.argsort(costs, kind="stable")  # shortest first: the ones to move
    theirs, mine = order[tall[order]], order[~tall[order]]
    ahead = WORKER_START_US + costs[theirs].sum() + WORKER_EXTRA_US * len(theirs) - costs[mine].sum()
    # a member moved takes its time off one side and puts it on the other: twice its cost
    if ahead > 0:
        moved = int(np.searchsorted(np.cumsum(2 * costs[theirs] + WORKER_EXTRA_US), ahead, side="right"))
        theirs, mine = theirs[moved:], np.concatenate([mine, theirs[:moved]])
    else:
        moved = int(np.searchsorted(np.cumsum(2 * costs[mine] + WORKER_EXTRA_US), -ahead, side="right"))
        theirs, mine = np.concatenate([theirs, mine[:moved]]), mine[moved:]
    return np.sort(index[theirs]).tolist(), np.sort(index[mine]).tolist()


def solved_here(indices: list, matrices: list, maximize: bool, then=None) -> list:
    """scipy's answer to each member, in order; where one raises, every member again, each error
    kept as its answer (errors are named, not hot). ``then``: called after."""
    solved = scipy_answers([matrices[b] for b in indices], maximize)
    if then is not None:
        then()
    return solved


def _store(answers: list, indices: list, solved: list) -> None:
    for b, answer in zip(indices, solved):
        answers[b] = answer
