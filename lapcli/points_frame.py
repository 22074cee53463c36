"""The same assignments from an easier problem: two point sets of equal size under squared
Euclidean costs, both centred on the rows' mean and the columns scaled to the rows' root-mean-square
radius (Frame); their largest total as a least one (Mirror); cityblock sets that lie apart in some
coordinates solved without them (Separation).

Why the frame: c(i, j) = |a_i − b_j|² = |a_i|² + |b_j|² − 2 a_i·b_j, and a permutation's total
of the row terms and of the column terms is the same for every permutation, so only the products
a_i·b_j choose it; moving b by a vector or scaling it by a positive factor changes each product by a row
term, a column term and that factor, and the optimal permutations stay the same (this is why the
optimal transport map between equal masses under this cost does not depend on where the two sets
lie: Brenier, "Polar factorization and monotone rearrangement of vector-valued functions", 1991).
The point auction (lapcli.engines.cuda.sap_points) does not see that: its candidates, tiles and
first ε assume a row's partner lies near it, and two uniform sets of 65,536 points, one moved by
(0.5, 0.5) or by (1, 1) with a permutation of the other plus noise, or scaled by 2, ran past 40 s
where the sets in place take 0.5 s (H200, docs/points.md). The matrix engines slow down as well
(scipy 15-20x, the auction on a matrix built on the GPU 200-300x at 4,096 points), and no reduction of
the matrix undoes it: the products themselves differ. In the frame they are the sets in place.

Exactly: with ā the rows' mean, r = σ_b / σ_a (σ a set's root-mean-square distance to its mean),
the moved rows a'_i = a_i − ā and columns b'_j = (b_j − b̄) / r, c(i, j) = r·c'(i, j) + R_i + C_j
with C_j = |b_j − ā|² − r·|b'_j|². Duals (u', v') proving an assignment optimal for c' give
v_j = r·v'_j + C_j for c (u follows from the assigned pairs), which the certificate then checks on
the true costs. Both sets are centred, not only b moved onto a, so that every coordinate the
solve reads is a difference from a mean, exact to the spread's ulp: sets lying 10⁶ from the origin
with a spread of 1 would otherwise carry a rounding of 10⁶'s ulp into every cost, past the
certificate's tolerance.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .arrays import host
from .points import PointProblem
from .problem import array_module


@dataclass
class Frame:
    """A square sqeuclidean PointProblem (``original``) and the same sets in the rows' frame
    (``moved``: both centred on ``centre``, the rows' mean, the columns scaled by 1 / ``ratio``):
    the same optimal assignments, costs scaled by ``ratio`` (r = σ_b / σ_a) up to a row and a
    column term."""

    original: PointProblem
    moved: PointProblem
    ratio: float
    centre: Any

    def describe(self) -> str:
        """The frame as a report's ``details["frame"]`` states it."""
        return f"both sets centred on the rows' mean, the columns scaled to the rows' radius (by {1 / self.ratio:.6g})"

    def tolerance(self) -> float:
        """The moved problem's zero of a reduced cost, at most the original's over r: duals within
        it, mapped back (column_duals), are within the original's."""
        return min(self.moved.tolerance(), self.original.tolerance() / self.ratio)

    def column_duals(self, v_moved, columns, moved_columns):
        """The original problem's column duals from the moved one's (same array library, any
        common order of the columns: ``columns`` and ``moved_columns`` are the (m, d) coordinates of
        b and b' in that order): r·v' + |b − ā|² − r·|b'|²."""
        centre = array_module(columns).asarray(self.centre)
        far, moved_far = ((columns - centre) ** 2).sum(axis=1), (moved_columns ** 2).sum(axis=1)
        return self.ratio * v_moved + (far - self.ratio * moved_far)


def onto_rows(problem: PointProblem) -> Frame | None:
    """The frame of a square, minimised sqeuclidean ``problem`` whose two sets both spread
    (σ > 0): both centred on the rows' mean, the columns scaled to the rows' radius; None for any
    other problem (its optimal assignments depend on where the sets lie, or every assignment is
    optimal), and where the moved costs would overflow float64 though the original's fit (a far
    outlier: scaled to the rows' radius, the columns can reach past the original's largest cost)."""
    if problem.metric != "sqeuclidean" or problem.maximize or problem.n_rows != problem.n_cols or problem.is_empty:
        return None
    rows, columns = problem.rows, problem.columns
    with np.errstate(over="ignore", invalid="ignore"):  # radii past float64's range: no frame (below)
        row_mean, column_mean = rows.mean(axis=0), columns.mean(axis=0)
        row_radius = float(((rows - row_mean) ** 2).sum(axis=1).mean()) ** 0.5
        column_radius = float(((columns - column_mean) ** 2).sum(axis=1).mean()) ** 0.5
        ratio = column_radius / row_radius if row_radius > 0 else 0.0
        if not 0.0 < ratio < float("inf"):
            return None
        # a square's work rows are a and its columns b (PointProblem.transposed: only a tall one swaps)
        moved = dataclasses.replace(problem, a=rows - row_mean, b=problem.xp.true_divide(columns - column_mean, ratio))
        if not math.isfinite(moved.largest_cost()) and math.isfinite(problem.largest_cost()):
            return None
    return Frame(problem, moved, ratio, row_mean)


@dataclass
class Mirror:
    """A maximised square sqeuclidean PointProblem (``original``) as a minimised one
    (``minimised``): the rows a − m and the columns m − b, m the midpoint of the two sets' means
    (``centre``). With a'' = a − m and b'' = b − m, Σ|a''_i − b''_σ(i)|² and Σ|a''_i + b''_σ(i)|² add
    up to the same 2·Σ|a''|² + 2·Σ|b''|² for every permutation σ, so the largest of the first is the
    smallest of the second: a minimised square, which the auction and the rows' frame solve, where a
    maximised one is a price war for the auction and left to the searches (8,192 points 33 s on an
    H100, docs/points.md). Moving both sets by m first keeps the dual mapping's numbers, |a''|² and
    |b''|², of the costs' size wherever the sets lie."""

    original: PointProblem
    minimised: PointProblem
    centre: Any
    key = "mirror"  # its report's details entry
    whose = "the mirrored sets"

    @property
    def easier(self) -> PointProblem:
        """The problem solve_points solves in the original's place."""
        return self.minimised

    def describe(self) -> str:
        """The mirror as a report's ``details["mirror"]`` states it."""
        return ("maximised as the least squared distances to the columns mirrored through the midpoint "
                "of the two sets' means (the same optimal assignments)")

    def duals(self, u_minimised, v_minimised):
        """The original's duals (c − u − v ≤ 0 everywhere, 0 on the assignment; host float64) from
        the minimised problem's (c'' − u'' − v'' ≥ 0): u = 2|a''|² − u'', v = 2|b''|² − v''."""
        rows, columns = (host(side) for side in (self.minimised.a, self.minimised.b))  # a − m, m − b
        u = 2.0 * (rows ** 2).sum(axis=1) - np.asarray(host(u_minimised), dtype=np.float64)
        v = 2.0 * (columns ** 2).sum(axis=1) - np.asarray(host(v_minimised), dtype=np.float64)
        return u, v


def mirrored(problem: PointProblem) -> Mirror | None:
    """The Mirror of a maximised square sqeuclidean ``problem`` off a line (1-D sets are sorted
    either way: engine ``sorted``); None for any other, and where the mirrored sets' costs would
    overflow float64 (coordinates near its largest)."""
    if problem.metric != "sqeuclidean" or not problem.maximize or problem.n_rows != problem.n_cols \
            or problem.is_empty or problem.on_a_line:
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        halve = problem.xp.true_divide  # (not `/ 2`: CuPy sends it through NumPy's dispatch)
        centre = halve(problem.a.mean(axis=0), 2) + halve(problem.b.mean(axis=0), 2)
        minimised = dataclasses.replace(problem, a=problem.a - centre, b=centre - problem.b, maximize=False)
        if not math.isfinite(minimised.largest_cost()):
            return None
    return Mirror(problem, minimised, centre)


@dataclass
class Separation:
    """A square cityblock PointProblem (``original``) whose two sets lie on either side of a value
    in some coordinates (``apart``: in each, every row ≤ every column, sign +1, or ≥, sign −1), as
    the same sets without the ``dropped`` ones (``reduced``: all of ``apart``, or all but the first
    where every coordinate lies apart). In such a coordinate |a_k − b_k| = s_k·(b_k − a_k) for
    every pair: a row term plus a column term, the same total for every permutation, so the optimal
    assignments are the reduced problem's, in both senses. Two sets apart along x but overlapping
    in y are then one line (engine ``sorted``); where every coordinate lies apart every assignment
    is optimal. The point auction does not see it: every row's cheapest columns are the same corner
    of the columns' set (8,192 points moved by (3, 3) ran past 10 s on an H200, docs/points.md)."""

    original: PointProblem
    reduced: PointProblem
    apart: tuple[int, ...]
    dropped: tuple[int, ...]
    signs: tuple[float, ...]  # a dropped coordinate's s_k
    middles: tuple[float, ...]  # and a value between the two sets there
    key = "separated"  # its report's details entry
    whose = "the reduced sets"

    @property
    def easier(self) -> PointProblem:
        """The problem solve_points solves in the original's place."""
        return self.reduced

    def describe(self) -> str:
        """The separation as a report's ``details["separated"]`` states it."""
        def listed(coordinates):
            return f"coordinate{'s' * (len(coordinates) > 1)} {', '.join(map(str, coordinates))}"

        kept = [k for k in range(self.original.dim) if k not in self.dropped]
        return (f"the sets lie apart in {listed(self.apart)}: the terms of {listed(self.dropped)} are the same for "
                f"every assignment, solved on {listed(kept)}")

    def duals(self, u_reduced, v_reduced):
        """The original's duals (host float64; c − u − v ≥ 0 when minimising, ≤ 0 when maximising,
        0 on the assignment) from the reduced problem's: each dropped coordinate's row and column
        terms added, −s_k·(a_k − m_k) and s_k·(b_k − m_k), m_k between the two sets (terms of the
        costs' size wherever the sets lie)."""
        rows, columns = (np.asarray(host(side), dtype=np.float64)[:, list(self.dropped)]
                         for side in (self.original.a, self.original.b))
        signs, middles = np.asarray(self.signs), np.asarray(self.middles)
        u = np.asarray(host(u_reduced), dtype=np.float64) - ((rows - middles) * signs).sum(axis=1)
        v = np.asarray(host(v_reduced), dtype=np.float64) + ((columns - middles) * signs).sum(axis=1)
        return u, v


def separated(problem: PointProblem) -> Separation | None:
    """The Separation of a square cityblock ``problem`` of two or more coordinates, some of which
    lie apart; None for any other (1-D sets are sorted either way: engine ``sorted``)."""
    if problem.metric != "cityblock" or problem.n_rows != problem.n_cols or problem.is_empty or problem.dim < 2:
        return None
    low_a, high_a, low_b, high_b = (host(bound) for bound in (problem.a.min(axis=0), problem.a.max(axis=0),
                                                              problem.b.min(axis=0), problem.b.max(axis=0)))
    ahead, behind = high_a <= low_b, high_b <= low_a  # the rows on the low side of the columns, or the high
    apart = tuple(int(k) for k in np.flatnonzero(ahead | behind))
    if not apart:
        return None
    dropped = apart if len(apart) < problem.dim else apart[1:]
    signs = tuple(1.0 if ahead[k] else -1.0 for k in dropped)
    middles = tuple(float(high_a[k] / 2 + low_b[k] / 2 if ahead[k] else high_b[k] / 2 + low_a[k] / 2)
                    for k in dropped)
    xp = problem.xp
    keep = xp.asarray([k for k in range(problem.dim) if k not in dropped])
    reduced = dataclasses.replace(problem, a=xp.ascontiguousarray(problem.a[:, keep]),
                                  b=xp.ascontiguousarray(problem.b[:, keep]))
    return Separation(problem, reduced, apart, dropped, signs, middles)
