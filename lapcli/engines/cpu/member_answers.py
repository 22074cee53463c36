"""A ragged batch's answers, member by member, as the pipeline returns them: the column of each
row of every member (−1 where none), in one padded array or one array per member.

A member's answer is None (an empty member), scipy's (row_ind, col_ind), or already the column
of each of its rows (int64; the worker process's form, lapcli.engines.cpu.member_process)."""

from __future__ import annotations

import numpy as np


def as_pairs(answer) -> tuple[np.ndarray, np.ndarray]:
    """(row_ind, col_ind) of a solved member's answer, either form."""
    if type(answer) is tuple:
        return answer
    rows = np.flatnonzero(answer >= 0)
    return rows, answer[rows]


def padded_columns(answers: list, rows: np.ndarray) -> np.ndarray:
    """(B, most rows) the column of each member's row, −1 where none, from the members' answers,
    in one scatter."""
    batch = len(answers)
    col_ind = np.full((batch, int(rows.max()) if batch else 0), -1, dtype=np.int64)
    solved = [b for b, answer in enumerate(answers) if answer is not None]
    starts = np.asarray(solved, dtype=np.int64) * col_ind.shape[1]
    scatter_columns(col_ind.reshape(-1), [answers[b] for b in solved], starts)
    return col_ind


def member_columns(answers: list, rows: np.ndarray, cols: np.ndarray) -> list:
    """Each member's column of each row (−1 where none), one int64 array per member: scipy's own
    columns where every row is assigned (rows ≤ cols, in order) or the answer already is that
    array; the others (tall or empty members) scattered in one pass (:func:`fill_scattered`). 1000
    members of 1..40 × 1..40: ~0.25 ms, against ~0.7 ms to scatter all into a padded array and cut
    that up."""
    columns = [answer[1] if type(answer) is tuple else answer for answer in answers]
    rest = [b for b in np.flatnonzero((rows > cols) | (rows * cols == 0)).tolist()
            if type(answers[b]) is not np.ndarray]
    fill_scattered(columns, rest, rows[rest].tolist(), [answers[b] for b in rest])
    return columns


def fill_scattered(columns: list, rest: list, lengths: list, answers: list) -> None:
    """``columns[rest[k]]``: the column of each of the ``lengths[k]`` rows of a member whose answer
    is ``answers[k]`` (scipy's pair, or None: no row assigned), −1 where none; all of them
    scattered into one array in one pass and cut into views."""
    if not rest:
        return
    ends = np.cumsum(lengths)
    starts = ends - lengths
    values = np.full(int(ends[-1]), -1, dtype=np.int64)
    assigned = [k for k, answer in enumerate(answers) if answer is not None]
    scatter_columns(values, [answers[k] for k in assigned], starts[assigned])
    for b, start, end in zip(rest, starts.tolist(), ends.tolist()):
        columns[b] = values[start:end]


def scatter_columns(out: np.ndarray, answers: list, starts: np.ndarray) -> None:
    """Each answer's columns into the flat ``out`` at its start plus its rows, in one assignment:
    ``out[starts[k] + rows_k] = cols_k`` for the k-th (rows_k, cols_k); an answer that is already
    the column of each row is copied in as it is (−1 included)."""
    if not answers:
        return
    found = [answer[0] if type(answer) is tuple else np.arange(len(answer)) for answer in answers]
    counts = np.fromiter(map(len, found), dtype=np.int64, count=len(found))
    out[np.repeat(starts, counts) + np.concatenate(found)] = np.concatenate(
        [answer[1] if type(answer) is tuple else answer for answer in answers])
