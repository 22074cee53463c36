"""The worker process of lapcli.engines.cpu.member_process: solves its share of a ragged batch's
members with scipy, in a process of its own, so that its solves and the caller's never wait on one
interpreter lock.

lapcli.engines.cpu.member_process runs :func:`main` given the file descriptor of a file both map.
It reads requests (pickled) on stdin and answers each on what was stdout (pickled, with the
request's number); anything else written to stdout goes to stderr. The members' values and their
answers live in that file:

    [values, member after member, row by row][int64 column of each row, member after member]

where member k has rows[k] × cols[k] values (float64, or 64-bit integers of one dtype, which
scipy converts) and rows[k] columns (−1: a row without one, in a tall
member or one scipy refused). It ends when stdin closes (the caller's process ended), and ignores
Ctrl-C (the terminal sends it to the whole process group; the caller decides what it means).
"""

from __future__ import annotations

import mmap
import os
import pickle
import signal
import sys

import numpy as np

from ...float64_exact import float64_exact_magnitude
from .member_answers import scatter_columns
from .member_values import scipy_answers, spread_overflows

READY = b"lapcli member worker\n"


def layout(rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(each member's first value, each member's first row, values in all, rows in all): the shared
    file's layout for members of rows × cols (int64 arrays)."""
    sizes = rows * cols
    value_ends, row_ends = np.cumsum(sizes), np.cumsum(rows)
    return value_ends - sizes, row_ends - rows, int(value_ends[-1]), int(row_ends[-1])


def views(buffer, rows: np.ndarray, cols: np.ndarray, value_type: str = "<f8"):
    """(values, col_of_row): views of the shared ``buffer`` laid out for the members
    (:func:`layout`), the values of ``value_type`` (float64, or 64-bit integers), the columns int64."""
    _, _, values, all_rows = layout(rows, cols)
    flat = np.frombuffer(buffer, dtype=np.dtype(value_type), count=values)
    return flat, np.frombuffer(buffer, dtype=np.int64, count=all_rows, offset=8 * values)


def bytes_needed(rows: np.ndarray, cols: np.ndarray) -> int:
    _, _, values, all_rows = layout(rows, cols)
    return 8 * (values + all_rows)


def solve_share(buffer, rows: np.ndarray, cols: np.ndarray, maximize: bool, check_spread: bool,
                value_type: str = "<f8", exact_side: int = 0):
    """Solve every member laid out in ``buffer``; write the column of each of its rows there.
    Returns (errors, refused, inexact): scipy's ValueError messages as (member, message); whether
    a row's finite values span more than float64 holds (lapcli.engines.cpu.member_values.
    spread_overflows; only with ``check_spread``); and, with ``exact_side`` (integer members of
    sides up to it), whether float64 might not hold their costs and paths exactly
    (lapcli.float64_exact.float64_exact_magnitude): then nothing is solved, the caller solves them exactly."""
    value_starts, row_starts, _, _ = layout(rows, cols)
    flat, col_of_row = views(buffer, rows, cols, value_type)
    if exact_side and not float64_exact_magnitude(max(-float(flat.min()), float(flat.max())), exact_side):
        return [], False, True
    refused = bool(check_spread) and flat.dtype.kind == "f" and spread_overflows(flat, rows, cols)
    matrices = [flat[start:start + r * c].reshape(r, c)
                for start, r, c in zip(value_starts.tolist(), rows.tolist(), cols.tolist())]
    found = scipy_answers(matrices, maximize)
    errors = [(k, str(answer)) for k, answer in enumerate(found) if type(answer) is not tuple]
    solved = [k for k, answer in enumerate(found) if type(answer) is tuple]
    col_of_row.fill(-1)
    scatter_columns(col_of_row, [found[k] for k in solved], row_starts[solved])  # member k's row r: row_starts[k] + r
    return errors, refused, False


def main(shared: int) -> None:
    """Answer requests until stdin closes; ``shared``: the descriptor of the file both map."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot break the replies
    requests = sys.stdin.buffer
    replies.write(READY)
    replies.flush()
    mapped, mapped_size = None, 0
    while True:
        try:
            sequence, size, rows, cols, value_type, maximize, check_spread, exact_side = pickle.load(requests)
        except EOFError:
            return
        if size != mapped_size:  # the caller grew the file: map it again
            mapped, mapped_size = mmap.mmap(shared, size), size
        pickle.dump((sequence, *solve_share(mapped, rows, cols, maximize, check_spread, value_type, exact_side)),
                    replies)
        replies.flush()
