"""Classical Hungarian algorithm (Munkres, six steps) in vectorised NumPy.

This is the readable specification of ``kernels/hungarian.cu``: the same steps, the same data
structures and names, the same per-step accounting, and the same choices. Where the kernel runs a
step in parallel over zeros, rows or columns, this module runs the same step as one array
operation; where threads could race, both follow one rule (in step 2 row i takes its first free
zero from column i on, in step 4 its smallest available column; a column its smallest claiming row, a column's green is its largest visiting row, a step-4
round sees the covers as they were when it began), so the twin and the kernel take the same steps
and their step counts are equal (asserted by the GPU tests).

Step 1 is ``auction_start`` by default (engines ``numpy`` and ``cuda``): parallel
rounds of Jonker–Volgenant's augmenting row reduction, then steps 2–6 from its stars and duals.

Data (LAP19 §4.1):
  u, v                    dual variables; the reduced cost ("slack") of (i, j) is
                          cost[i, j] − u[i] − v[j]. Slack is not stored: step 6 updates the
                          duals in O(n) and recomputes slack only over the uncovered block
                          instead of adding/subtracting Δ over all n² entries.
  zero_rows, zero_cols    the compressed matrix: every position whose slack is zero (≤ eps)
  cover_row, cover_col    covers (bool)
  column_of_star_at_row, row_of_star_at_column, column_of_prime_at_row,
  row_of_green_at_column  −1 means none

The zero list is kept exact incrementally: step 6 lowers slack only on uncovered rows ×
uncovered columns (new zeros appear there) and raises it only on covered × covered (zeros
vanish there); every other entry keeps its slack.

Step 6 keeps each uncovered row's minimum slack (RowMinima). Within a phase (step 3 to step 5)
rows are only ever covered and columns only ever uncovered, so after a shift a row's minimum is
its old minimum − Δ, corrected by the columns step 4 uncovered since: only the first step 6 of a
phase reads whole rows. Δ, the zeros and the step counts are the same as recomputing everything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import SolverError
from ...steps import AUCTION_PATIENCE, AUCTION_ROUNDS, StepRecorder


@dataclass
class RowMinima:
    """Minimum slack of each uncovered row, valid from the first step 6 of a phase to its end."""

    row_min: np.ndarray
    valid: bool = False
    new_cols: list = field(default_factory=list)  # columns uncovered by step 4 since the last step 6

    def new_phase(self) -> None:
        self.valid = False
        self.new_cols.clear()


def smallest_per_key(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One (key, value) pair per distinct key: its smallest value (the kernel's atomicMin)."""
    order = np.lexsort((values, keys))
    keys, values = keys[order], values[order]
    first = np.ones(keys.size, dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return keys[first], values[first]


def step1_reduce(cost: np.ndarray, eps: float):
    """Row minima, then column minima of the row-reduced matrix; list the zeros."""
    u = cost.min(axis=1)
    v = (cost - u[:, None]).min(axis=0)
    zero_rows, zero_cols = np.nonzero(cost - u[:, None] - v[None, :] <= eps)
    return u, v, zero_rows, zero_cols


def step2_star_zeros(zero_rows, zero_cols, column_of_star_at_row, row_of_star_at_column) -> int:
    """Star a maximal set of independent zeros, several per pass: each row i without a star picks
    its free column j with (j − i) mod k least (the first from its own index on: rows that share
    zeros pick apart), each picked column stars its smallest picking row (the kernel's step2_pick /
    step2_star). Returns the number of passes, the last one finding nothing."""
    k = len(row_of_star_at_column)
    passes = 0
    while True:
        passes += 1
        free = (column_of_star_at_row[zero_rows] < 0) & (row_of_star_at_column[zero_cols] < 0)
        if not free.any():
            return passes
        rows, offsets = smallest_per_key(zero_rows[free], (zero_cols[free] - zero_rows[free]) % k)
        cols, rows = smallest_per_key((offsets + rows) % k, rows)
        column_of_star_at_row[rows] = cols
        row_of_star_at_column[cols] = rows




def auction_start(cost: np.ndarray, rounds: int = AUCTION_ROUNDS, patience: int = AUCTION_PATIENCE):
    """A start for the Hungarian phases from parallel rounds of Jonker–Volgenant's augmenting row
    reduction (an auction with bids u2 − u1), instead of step 1's reduction and step 2's greedy
    stars. Returns (u, v, column_of_star_at_row, row_of_star_at_column, rounds run).

    Why: at high cost ranges the classical phases pay one step 6 per new zero, thousands of them;
    after a few hundred rounds of this auction only ~1 % of the rows are free and the phases need
    ~10× fewer steps 4 and 6 (docs/design.md). Every round is one parallel pass,
    so a kernel can run it as a few grid-wide steps per round; this function is its specification.

    v starts at the column minima (JV's column reduction), so c − v ≥ 0. A round: every free row
    i finds its smallest reduced cost u1 = c[i, j1] − v[j1] (smallest j1 among ties) and its
    second smallest u2 = c[i, j2] − v[j2], and bids u2 − u1 for j1 (for j2 when u1 = u2 and j1
    has a star, as JV's reduction does); each bid-for column takes its largest bid (ties: the
    smallest row), lowers v by it and frees its previous row. The winner's c − v is then
    u2, still its row's minimum (v only decreases, so other reduced costs only grow), so with
    u[i] = min_j (c[i, j] − v[j]) at the end the duals are feasible and every star is tight, as
    steps 3–6 require; the result is optimal whatever the number of rounds (0: no star, v the
    column minima). Ties (bids of 0) can pass a column back and forth without freeing a row (at low
    ranges most of the rows stay free that way): the auction stops after ``rounds`` rounds, when no
    row is free, or when the free rows have not become fewer for ``patience`` rounds. The kernel
    (hungarian.cu, auction_*) counts the free rows in its bid pass and stops by the same rule.
    """
    size = cost.shape[0]
    v = cost.min(axis=0)
    column_of_star_at_row = np.full(size, -1, dtype=np.int64)
    row_of_star_at_column = np.full(size, -1, dtype=np.int64)
    fewest_free, fewest_at = size + 1, 0
    done = 0
    while done < rounds and size > 1:
        free = np.flatnonzero(column_of_star_at_row < 0)
        if free.size == 0:
            break
        if free.size < fewest_free:
            fewest_free, fewest_at = free.size, done
        elif done - fewest_at >= patience:
            break
        done += 1
        with np.errstate(over="ignore"):  # costs near 1.8e308: an overflow is +inf, never a row's best
            reduced = cost[free] - v[None, :]
        best = reduced.argmin(axis=1)
        first = reduced[np.arange(free.size), best]
        reduced[np.arange(free.size), best] = np.inf if reduced.dtype.kind == "f" else np.iinfo(reduced.dtype).max
        second = reduced.argmin(axis=1)
        bid = reduced[np.arange(free.size), second] - first
        # JV's rule for a tie (bid 0) on a starred column: take the other smallest column instead,
        # so that equal costs spread over the columns instead of passing one column around
        best = np.where((bid == 0) & (row_of_star_at_column[best] >= 0), second, best)
        order = np.lexsort((free, -bid, best))  # by column, then largest bid, then smallest row
        first_of_column = np.ones(order.size, dtype=bool)
        first_of_column[1:] = best[order][1:] != best[order][:-1]
        winners = order[first_of_column]
        cols, rows, bids = best[winners], free[winners], bid[winners]
        displaced = row_of_star_at_column[cols]
        column_of_star_at_row[displaced[displaced >= 0]] = -1
        v[cols] -= bids
        row_of_star_at_column[cols] = rows
        column_of_star_at_row[rows] = cols
    with np.errstate(over="ignore"):  # costs near 1.8e308: an overflow is +inf, never a row's least
        u = (cost - v[None, :]).min(axis=1)
    return u, v, column_of_star_at_row, row_of_star_at_column, done


def step5_augment(column_of_prime_at_row, column_of_star_at_row, row_of_star_at_column) -> None:
    """Flip every vertex-disjoint augmenting path at once (LAP19 step 5a/5b).

    5a: from each primed row without a star, walk prime → star-in-that-column → prime … and
        mark each column's green row: the largest row that reaches it (paths that join share
        their tail; the kernel's atomicMax).
    5b: from each green column without a star (a path end), walk back along greens, turning
        the primes into stars and the stars into nothing.
    """
    size = column_of_prime_at_row.shape[0]
    row_of_green_at_column = np.full(size, -1, dtype=np.int64)
    starts = np.flatnonzero((column_of_prime_at_row >= 0) & (column_of_star_at_row < 0))
    for row in starts:  # 5a
        col = column_of_prime_at_row[row]
        row_of_green_at_column[col] = max(row_of_green_at_column[col], row)
        while (row := row_of_star_at_column[col]) >= 0:
            col = column_of_prime_at_row[row]
            row_of_green_at_column[col] = max(row_of_green_at_column[col], row)
    ends = np.flatnonzero((row_of_green_at_column >= 0) & (row_of_star_at_column < 0))
    for col in ends:  # 5b
        row = row_of_green_at_column[col]
        while True:
            old_star_col = column_of_star_at_row[row]
            column_of_star_at_row[row] = col
            row_of_star_at_column[col] = row
            if old_star_col < 0:
                break
            col = old_star_col
            row = row_of_green_at_column[col]


def solve_square(work: np.ndarray, eps: float, recorder: StepRecorder, max_iterations: int | None = None,
                 auction_rounds: int = 0):
    """Solve the k×k work matrix; return (column_of_star_at_row, u, v): a permutation and the
    duals that prove it optimal (cost − u − v ≥ −eps, = 0 within eps on the stars).

    ``eps`` is 0 for integer costs (exact) and the problem's tolerance for floats.
    ``max_iterations`` caps step-4 rounds + step-6 shifts (a guard; never reached by a correct run).
    ``auction_rounds`` > 0 replaces step 1 by ``auction_start`` (its time counted as step 1), as
    the kernel does with the same number (engines ``numpy`` and ``cuda`` both pass AUCTION_ROUNDS;
    0, the default here, is the classical step 1).
    """
    size = work.shape[0]
    cost = work.astype(np.int64 if work.dtype.kind in "iu" else np.float64, copy=False)
    if max_iterations is None:
        max_iterations = 4 * size * size + 100
    column_of_star_at_row = np.full(size, -1, dtype=np.int64)
    row_of_star_at_column = np.full(size, -1, dtype=np.int64)
    with recorder.step(1):
        if auction_rounds > 0 and size > 1:
            u, v, column_of_star_at_row, row_of_star_at_column, _ = auction_start(cost, auction_rounds)
            with np.errstate(over="ignore"):  # costs near 1.8e308: an overflow is +inf, never a zero
                zero_rows, zero_cols = np.nonzero(cost - u[:, None] - v[None, :] <= eps)
        else:
            u, v, zero_rows, zero_cols = step1_reduce(cost, eps)

    with recorder.step(2):
        passes = step2_star_zeros(zero_rows, zero_cols, column_of_star_at_row, row_of_star_at_column)
    recorder.counts[2] += passes - 1

    iterations = 0
    minima = RowMinima(np.zeros(size, dtype=cost.dtype))
    while True:
        with recorder.step(3):  # cover the starred columns; n stars means done
            cover_col = row_of_star_at_column >= 0
            cover_row = np.zeros(size, dtype=bool)
            column_of_prime_at_row = np.full(size, -1, dtype=np.int64)
            minima.new_phase()
            if int(cover_col.sum()) == size:
                return column_of_star_at_row, u, v
        while True:
            iterations += 1
            if iterations > max_iterations:
                raise SolverError(f"iteration cap of {max_iterations} reached (this is a bug; please report it)")
            with recorder.step(4):
                # One round primes, in every row with an uncovered zero, its smallest such column
                # (covers as they were when the round began): rows are distinct, so covering one
                # never hides another's zero, and some serial order of step 4 does exactly the
                # same (LAP19 App. A). Zeros in the columns it uncovers wait for the next round.
                uncovered = ~cover_row[zero_rows] & ~cover_col[zero_cols]
                found = bool(uncovered.any())
                if found:
                    rows, cols = smallest_per_key(zero_rows[uncovered], zero_cols[uncovered])
                    column_of_prime_at_row[rows] = cols
                    star_cols = column_of_star_at_row[rows]
                    has_star = star_cols >= 0
                    cover_row[rows[has_star]] = True
                    cover_col[star_cols[has_star]] = False
                    minima.new_cols.extend(star_cols[has_star].tolist())
                    path_found = not has_star.all()
            if found and path_found:
                with recorder.step(5):
                    step5_augment(column_of_prime_at_row, column_of_star_at_row, row_of_star_at_column)
                break
            if found:
                continue
            with recorder.step(6):
                zero_rows, zero_cols = step6_shift_duals(
                    cost, u, v, cover_row, cover_col, zero_rows, zero_cols, eps, minima
                )


def step6_shift_duals(cost, u, v, cover_row, cover_col, zero_rows, zero_cols, eps, minima=None):
    """Δ = min slack over uncovered rows × uncovered columns; u += Δ on uncovered rows and
    v −= Δ on covered columns (slack: −Δ uncovered×uncovered, +Δ covered×covered). Returns the
    updated zero list: new zeros added, zeros of covered×covered removed."""
    minima = minima if minima is not None else RowMinima(np.zeros(cost.shape[0], dtype=cost.dtype))
    uncovered_rows = np.flatnonzero(~cover_row)
    uncovered_cols = np.flatnonzero(~cover_col)
    row_min = minima.row_min
    if minima.valid:  # 6a, incremental: only the newly uncovered columns
        if minima.new_cols:
            new_cols = np.unique(np.asarray(minima.new_cols, dtype=np.int64))
            added = cost[np.ix_(uncovered_rows, new_cols)] - u[uncovered_rows, None] - v[None, new_cols]
            row_min[uncovered_rows] = np.minimum(row_min[uncovered_rows], added.min(axis=1))
    else:  # 6a, first step 6 of the phase: whole rows
        slack = cost[np.ix_(uncovered_rows, uncovered_cols)] - u[uncovered_rows, None] - v[None, uncovered_cols]
        row_min[uncovered_rows] = slack.min(axis=1)
    delta = row_min[uncovered_rows].min()
    if not delta > 0:
        raise SolverError(f"step 6 found Δ = {delta} ≤ 0: the zero list lost an uncovered zero (a bug)")
    # 6b: rows whose minimum reaches Δ hold the new zeros; rescan them (their new minimum comes
    # from the rescan), the other rows' minima drop by Δ.
    reaching = row_min[uncovered_rows] - delta <= eps
    rescanned = uncovered_rows[reaching]
    row_min[uncovered_rows[~reaching]] -= delta
    slack = cost[np.ix_(rescanned, uncovered_cols)] - (u[rescanned] + delta)[:, None] - v[None, uncovered_cols]
    new_r, new_c = np.nonzero(slack <= eps)
    if rescanned.size:
        row_min[rescanned] = slack.min(axis=1)
    keep = ~(cover_row[zero_rows] & cover_col[zero_cols])
    u[uncovered_rows] += delta
    v[cover_col] -= delta
    minima.valid = True
    minima.new_cols.clear()
    zero_rows = np.concatenate([zero_rows[keep], rescanned[new_r]])
    zero_cols = np.concatenate([zero_cols[keep], uncovered_cols[new_c]])
    return zero_rows, zero_cols
