"""The CPU member loop's worker process (lapcli.engines.cpu.member_process): half of a ragged
list's members solved in a process of its own. Its answers are the threads' and a scipy loop's,
its refusals the same words, and a worker that dies or is interrupted leaves the answers right."""

import mmap
import os

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.engines.cpu.member_threads import SHARED_ENTRIES, SHARED_MEAN_ENTRIES
from lapcli.errors import InfeasibleError, LapInputError

from .test_ragged import assert_loop_optimum, random_members


def cpu_batch(matrices, **options):
    """solve_batch by the CPU engine wherever the tests run (``auto`` takes a GPU where there is one)."""
    return lapcli.solve_batch(matrices, solver="scipy-batch", **options)


def cpu_columns(matrices, maximize=False):
    """batch_linear_assignment's call without a GPU: the columns alone, one array a member."""
    return cpu_batch(matrices, maximize=maximize, objectives=False, certify=False).col_ind


def mixed_members(rng, count=600, largest=30):
    """Members of 0..largest a side, floats with a forbidden pair each, float32 and integer ones
    among them."""
    matrices = random_members(rng, count, largest, "float", forbidden=True)
    matrices[::7] = [m.astype(np.float32) for m in matrices[::7]]
    matrices[::11] = [rng.integers(-40, 60, m.shape) for m in matrices[::11]]
    return matrices


@pytest.mark.parametrize("maximize", [False, True])
def test_the_worker_answers_as_a_scipy_loop(rng, worker_process, maximize):
    matrices = mixed_members(rng) if not maximize else random_members(rng, 600, 30, "float")
    solution = cpu_batch(matrices, maximize=maximize)
    assert solution.report.details.get("worker_process") is True
    assert_loop_optimum(matrices, solution.col_ind, solution.objectives, maximize)
    columns = cpu_columns(matrices, maximize=maximize)  # one array a member
    assert [c.tolist() for c in columns] == [np.asarray(c).tolist() for c in solution.col_ind]


@pytest.fixture
def even_to_the_worker(monkeypatch):
    """The worker takes the members of even index, this thread the odd ones (by default the split
    follows estimated times, and a small member may always land on one side)."""
    from lapcli.engines.cpu import member_threads

    monkeypatch.setattr(member_threads, "_worker_split",
                        lambda index, rows, cols: ([b for b in index.tolist() if b % 2 == 0],
                                                   [b for b in index.tolist() if b % 2]))


def test_the_worker_and_the_threads_give_the_same_answers(rng, worker_process, monkeypatch):
    matrices = [rng.random((int(r), int(c))) for r, c in rng.integers(1, 41, (400, 2))]
    by_worker = cpu_batch(matrices, objectives=False)
    assert by_worker.report.details.get("worker_process") is True
    monkeypatch.setenv("LAPCLI_WORKER_PROCESS", "0")
    by_threads = cpu_batch(matrices, objectives=False)
    assert "worker_process" not in by_threads.report.details
    assert [np.asarray(c).tolist() for c in by_worker.col_ind] == [np.asarray(c).tolist() for c in by_threads.col_ind]


def refusal(matrices):
    with pytest.raises((LapInputError, InfeasibleError, ValueError)) as caught:
        cpu_columns(matrices)
    return type(caught.value), str(caught.value)


@pytest.mark.parametrize("bad", ["nan", "infeasible", "spread"])
def test_the_worker_refuses_a_member_in_the_threads_words(rng, worker_process, even_to_the_worker, monkeypatch, bad):
    """A bad member is named wherever it lies, in whichever process solves it (members 0 and 200
    in the worker, 1 and 399 here): NaN (invalid entries), no finite cost (infeasible), a spread
    float64 cannot hold."""
    matrices = [rng.random((int(r), int(c))) for r, c in rng.integers(2, 30, (400, 2))]
    for at in (0, 1, 200, 399):
        listed = list(matrices)
        member = listed[at].copy()
        if bad == "nan":
            member[0, 0] = np.nan
        elif bad == "infeasible":
            member[:] = np.inf
        else:
            member[0, 0], member[0, 1] = -9e307, 9e307
        listed[at] = member
        by_worker = refusal(listed)
        assert worker_process.usable()
        monkeypatch.setenv("LAPCLI_WORKER_PROCESS", "0")
        assert by_worker == refusal(listed)
        monkeypatch.delenv("LAPCLI_WORKER_PROCESS")
        if bad != "spread":
            assert f"problem {at} of 400" in by_worker[1]  # 0-based, as every batch error names them
        else:
            assert "overflows float64" in by_worker[1]


def brute_force_optimum(matrix) -> int:
    """The least total of a full matching of a small integer matrix, in Python integers."""
    from itertools import permutations

    k, m = matrix.shape
    if k > m:
        return brute_force_optimum(matrix.T)
    return min(sum(int(matrix[r, c]) for r, c in enumerate(chosen)) for chosen in permutations(range(m), k))


@pytest.mark.parametrize("at", [0, 1])  # the wide member in the worker's share, or this thread's
def test_integers_each_process_checks_and_a_wide_one_is_solved_exactly(rng, worker_process, even_to_the_worker, at):
    """An integer list beside the worker is checked by each process on its own share (scipy
    converts to float64); where one member's costs are too wide for float64's paths, every
    integer member is solved exactly instead."""
    matrices = [rng.integers(-40, 60, (int(r), int(c))) for r, c in rng.integers(1, 30, (400, 2))]
    solution = cpu_batch(matrices)
    assert solution.report.details.get("worker_process") is True
    assert_loop_optimum(matrices, solution.col_ind, solution.objectives)
    # float64 rounds 2^53 + 3 and 2^53 + 5 up to 2^53 + 4 and makes the worse matching look better
    wide = 2**53 + np.array([[3, 2], [5, 3]], dtype=np.int64)
    matrices[at] = wide
    solution = cpu_batch(matrices)
    cols = np.asarray(solution.col_ind[at])
    assert sum(int(wide[r, c]) for r, c in enumerate(cols.tolist())) == brute_force_optimum(wide)
    assert int(solution.objectives[at]) == brute_force_optimum(wide)
    others = [b for b in range(400) if b != at]
    assert_loop_optimum([matrices[b] for b in others], [solution.col_ind[b] for b in others],
                        [solution.objectives[b] for b in others])


def thirty_members(rng):
    return [rng.random((int(r), int(c))) for r, c in rng.integers(1, 30, (300, 2))]


def assert_solved_without_the_worker(matrices, found):
    solution = cpu_batch(matrices)
    assert_loop_optimum(matrices, solution.col_ind, solution.objectives)
    assert "worker_process" not in solution.report.details and found.dead
    return solution


def test_an_ended_worker_closes_its_file(rng, worker_process):
    """end() closed the pipes but not the shared file: "ResourceWarning: unclosed file" at exit."""
    cpu_batch(thirty_members(rng))  # the file mapped and used
    worker_process.end()
    assert worker_process.file.closed and (worker_process.mapped is None or worker_process.mapped.closed)


def test_a_dead_worker_leaves_the_answers_right(rng, worker_process):
    worker_process.process.kill()
    worker_process.process.wait()
    solution = assert_solved_without_the_worker(thirty_members(rng), worker_process)
    assert solution.report.details["threads"] == 2  # this call's share solved here, the threads after


def test_no_room_for_the_file_leaves_the_answers_right(rng, worker_process, monkeypatch):
    """Where the shared file cannot grow (a full /dev/shm), the worker is not written to (tmpfs
    would end the caller with SIGBUS) and ends."""
    def full(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(worker_process, "size", 0)
    monkeypatch.setattr(os, "posix_fallocate", full, raising=False)
    monkeypatch.setattr(worker_process.file, "truncate", full)
    assert_solved_without_the_worker(thirty_members(rng), worker_process)


def test_an_answer_out_of_step_ends_the_worker(rng, worker_process, monkeypatch):
    from lapcli.engines.cpu.member_process import Worker

    send = Worker.send

    def skipping(self, *args):  # the worker answers request n, the caller waits for n + 1
        send(self, *args)
        self.sequence += 1

    monkeypatch.setattr(Worker, "send", skipping)
    assert_solved_without_the_worker(thirty_members(rng), worker_process)


@pytest.mark.parametrize("when", ["solving", "just sent"])
def test_an_interrupted_call_ends_the_worker(rng, worker_process, monkeypatch, when):
    """Ctrl-C while the worker solves, or as the request has just gone: its answer would be read by
    the next call, so the worker is ended, and the next call's answers are right."""
    from lapcli.engines.cpu import member_threads
    from lapcli.engines.cpu.member_process import Worker

    matrices = thirty_members(rng)
    send, solved = Worker.send, member_threads.solved_here

    def interrupted_after_send(self, *args):
        send(self, *args)
        raise KeyboardInterrupt

    def interrupted(*args, **options):
        raise KeyboardInterrupt

    if when == "just sent":
        monkeypatch.setattr(Worker, "send", interrupted_after_send)
    else:
        monkeypatch.setattr(member_threads, "solved_here", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cpu_columns(matrices)
    assert worker_process.dead and worker_process.process.poll() is not None
    monkeypatch.setattr(Worker, "send", send)
    monkeypatch.setattr(member_threads, "solved_here", solved)
    assert_solved_without_the_worker(matrices, worker_process)


def test_where_sigpipe_would_kill_the_caller_no_worker_is_used(rng, worker_process):
    import signal

    default = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        solution = cpu_batch(thirty_members(rng))
    finally:
        signal.signal(signal.SIGPIPE, default)
    assert "worker_process" not in solution.report.details and worker_process.usable()


def test_a_list_is_shared_only_where_its_members_pay_for_it(rng, worker_process, monkeypatch):
    """solve_batch shares a list with the worker by batch_linear_assignment's rule: 300 members of
    1..8 × 1..8 (small ones) and of 10..14 × 10..14 (too few entries in all) stay in the caller's
    thread, 300 of 25..40 × 25..40 are shared; all answer as a scipy loop."""
    from lapcli.engines.cpu import member_threads

    monkeypatch.setattr(member_threads, "SHARED_ENTRIES", SHARED_ENTRIES)  # the fixture's undone
    monkeypatch.setattr(member_threads, "SHARED_MEAN_ENTRIES", SHARED_MEAN_ENTRIES)
    for sides, shared in (((1, 9), False), ((10, 15), False), ((25, 41), True)):
        matrices = [rng.random((int(r), int(c))) for r, c in rng.integers(*sides, (300, 2))]
        solution = cpu_batch(matrices)
        assert solution.report.details.get("worker_process", False) is shared
        assert solution.report.details["threads"] == (2 if shared else 1)
        assert_loop_optimum(matrices, solution.col_ind, solution.objectives)


def test_one_batch_does_not_start_a_worker(monkeypatch):
    from lapcli.engines.cpu import member_process

    monkeypatch.delenv("LAPCLI_WORKER_PROCESS", raising=False)
    fake_pid = os.getpid() + 10**6  # a process of its own in the tables
    monkeypatch.setattr(member_process.os, "getpid", lambda: fake_pid)
    monkeypatch.setattr(member_process, "_WORKERS", {})
    monkeypatch.setattr(member_process, "_ASKED", {})
    assert member_process.worker() is None and not member_process._WORKERS  # the first ask
    member_process.worker()
    started = member_process._WORKERS[fake_pid]
    try:
        assert started.ready.wait(30)
        monkeypatch.undo()
        assert started.usable()
    finally:
        started.owner = os.getpid()
        started.end()


def test_a_forked_child_leaves_its_parents_worker_alone(rng, worker_process):
    """A forked child neither uses its parent's worker nor ends it, even running the exit handler."""
    from lapcli.engines.cpu import member_process

    child = os.fork()
    if child == 0:  # the child: report by exit code only
        code = 0
        try:
            code = 1 if member_process.worker(start=False) is not None else 0
            member_process._end_workers()  # lapcli's exit handler, as the child's exit runs it
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert worker_process.usable()
    matrices = thirty_members(rng)
    solution = cpu_batch(matrices)
    assert solution.report.details.get("worker_process") is True
    assert_loop_optimum(matrices, solution.col_ind, solution.objectives)


def test_the_worker_program_writes_each_rows_column(rng):
    """member_worker.solve_share on a buffer as the caller lays it out: wide, tall and refused
    members, and the spread check."""
    from lapcli.engines.cpu import member_worker

    matrices = [rng.random((3, 5)), rng.random((5, 2)), np.array([[np.nan, 1.0]]), rng.random((1, 1))]
    rows = np.array([m.shape[0] for m in matrices])
    cols = np.array([m.shape[1] for m in matrices])
    buffer = mmap.mmap(-1, member_worker.bytes_needed(rows, cols))
    values, col_of_row = member_worker.views(buffer, rows, cols)
    values[:] = np.concatenate([m.ravel() for m in matrices])
    errors, refused, inexact = member_worker.solve_share(buffer, rows, cols, False, True)
    assert [k for k, _ in errors] == [2] and "invalid" in errors[0][1] and refused is False and inexact is False
    starts = np.cumsum(rows) - rows
    for k in (0, 1, 3):
        expected = np.full(rows[k], -1)
        found_rows, found_cols = scipy_lsa(matrices[k])
        expected[found_rows] = found_cols
        assert col_of_row[starts[k]:starts[k] + rows[k]].tolist() == expected.tolist()
    assert col_of_row[starts[2]] == -1
    values[0], values[1] = -9e307, 9e307
    assert member_worker.solve_share(buffer, rows, cols, False, True)[1] is True
    integers = np.frombuffer(buffer, dtype=np.int64, count=values.size)  # the same bytes as 64-bit integers
    integers[:] = rng.integers(-40, 60, integers.size)
    assert member_worker.solve_share(buffer, rows, cols, False, False, "<i8", exact_side=5) == ([], False, False)
    integers[7] = 2**50  # 2^50 · 4 · (5 + 1) passes 2^53: float64 may not hold the paths' sums
    col_of_row[:] = 7
    assert member_worker.solve_share(buffer, rows, cols, False, False, "<i8", exact_side=5) == ([], False, True)
    assert (col_of_row == 7).all()  # nothing solved
    del values, col_of_row, integers


@pytest.mark.parametrize("maximize", [False, True])
def test_the_worker_solves_float_members_far_from_zero_on_their_spread(rng, worker_process, even_to_the_worker,
                                                                         maximize):
    """The worker's share reduced as the caller's is (member_values.scipy_form): 1e6 + U(0, 1e-7)
    members as given came back off the optimum, and certify=True raised."""
    matrices = [1e6 + rng.random((int(r), int(c))) * 1e-7 for r, c in rng.integers(20, 31, (300, 2))]
    solution = cpu_batch(matrices, maximize=maximize, certify=True)
    assert solution.report.details.get("worker_process") is True and solution.report.certified
