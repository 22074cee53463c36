"""Engine ``sorted`` on two 1-D point sets of different sizes: the k smaller set's points matched in
order to k of the m larger set's (a dynamic programme over the band of columns each row may take),
with duals along chains of neighbouring pairs.

Why: on a line every metric here is a convex function of x − y, so the costs between both sets
sorted (the columns reversed when maximising) form a Monge array, and a Monge array has an optimal
assignment that does not cross: the r-th smallest row takes a column p_r with p_0 < p_1 < … < p_{k−1}
(Burkard, Klinz and Rudolf, "Perspectives of Monge properties in optimization", 1996; Aggarwal,
Bar-Noy, Khuller, Kravets and Schieber, "Efficient minimum cost matching and transportation using
the quadrangle inequality", 1995). Row r then takes one of columns r … r + m − k, and F_r(t), the
least cost of rows 0 … r with p_r ≤ r + t, obeys F_r(t) = min(F_r(t − 1), F_{r−1}(t) + w(r, r + t)):
k·(m − k + 1) costs, never more than the k × m matrix holds, one bit each kept to read the pairs
back.

The duals: a free column keeps v = 0, a taken column p_r gets v = −d_r, where d_r is the least cost
change of freeing p_r by an alternating path that ends on a free column, and u_r = w(r, p_r) + d_r.
Those are shortest-path distances, so every reduced cost is ≥ 0, and d ≥ 0 at an optimum (no
improving path). By the Monge inequality a path that jumps over a row's column, or crosses, costs no
less than one through the rows in between, so the shortest paths are chains of neighbours: rows
r, r − 1, …, q each take the column of the row below, and row q the cheapest free column between
p_{q−1} and p_q (or the same to the right), O(k + m) in all. The certificate still reads all k·m
computed costs (lapcli.points_certificate).
"""

from __future__ import annotations

from time import perf_counter

import numpy as np

from ...errors import SolverError
from ...points import costs

# Cells between two checks of the time limit (~25 ms of the programme on one core).
CELLS_A_CHECK = 1 << 22
# A row's own cost in cells (its NumPy calls, ~7 µs): what the programme costs on a thin band.
ROW_CELLS = 1024


def band_cells(k: int, m: int) -> int:
    """The costs the programme reads for k rows and m ≥ k columns: k·(m − k + 1)."""
    return k * (m - k + 1)


def band_work(k: int, m: int) -> int:
    """The programme's work in cells: band_cells and ROW_CELLS a row."""
    return band_cells(k, m) + ROW_CELLS * k


def band_pairs(x: np.ndarray, y: np.ndarray, metric: str, p: float, sign: float, timeout: float | None = None,
               began: float = 0.0) -> np.ndarray:
    """The columns p_0 < … < p_{k−1} (indices into ``y``) of the least total of sign·c(x_r, y_p_r),
    ``x`` (k, 1) sorted ascending, ``y`` (m, 1) in the order that makes the costs Monge (ascending;
    descending when maximising), k ≤ m. Ties go to the leftmost column. SolverError past ``timeout``
    seconds after ``began``."""
    k, m = len(x), len(y)
    width = m - k + 1
    every = max(1, CELLS_A_CHECK // (width + ROW_CELLS))  # rows between two looks at the clock

    def late(r: int) -> bool:
        return timeout is not None and r % every == 0 and perf_counter() - began > timeout

    least = np.zeros(width)  # F_{r−1}(t), t = 0 … m − k
    took = np.empty((k, (width + 7) // 8), dtype=np.uint8)  # row r's bit t: p_r = r + t where F_r(t) was set
    bits = np.empty(width, dtype=bool)
    for r in range(k):
        if late(r):
            raise SolverError(f"the sorted band ran past the time limit: {r:,} of {k:,} rows matched")
        with np.errstate(over="ignore"):  # a sum past float64's range: every total through it passes too
            taking = least + sign * costs(x[r], y[r:r + width], metric, p)  # F_{r−1}(t) + w(r, r + t)
        least = np.minimum.accumulate(taking)
        bits[0] = True
        np.less(taking[1:], least[:-1], out=bits[1:])  # strictly: on ties the leftmost column stays
        took[r] = np.packbits(bits)
    cols = np.empty(k, dtype=np.int64)
    t = width - 1
    for r in range(k - 1, -1, -1):  # back along the bits: row r took r + t, rows above end at t's bound
        if late(k - 1 - r):  # (counted from the pass's start: its last row, r = 0, is no place to stop)
            raise SolverError(f"the sorted band ran past the time limit: {k - 1 - r:,} of {k:,} pairs read back")
        row = np.unpackbits(took[r], count=width)
        t = int(np.flatnonzero(row[:t + 1])[-1])
        cols[r] = r + t
    return cols


def chain_duals(x: np.ndarray, y: np.ndarray, cols: np.ndarray, metric: str, p: float,
                sign: float) -> tuple[np.ndarray, np.ndarray]:
    """(u, v) of the work costs w = sign·c for the non-crossing assignment ``cols`` (band_pairs'),
    ``x`` and ``y`` as there: v = 0 on free columns and −d on taken ones, u_r = w(r, p_r) + d_r,
    d_r the cheaper of the chains to the left and to the right (module docstring)."""
    k, m = len(x), len(y)

    def w(rows, columns):
        return sign * costs(x[rows], y[columns], metric, p)

    rows = np.arange(k)
    own = w(rows, cols)
    taken = np.zeros(m, dtype=bool)
    taken[cols] = True
    free = np.flatnonzero(~taken)
    gap = np.searchsorted(cols, free)  # a free column lies between cols[gap − 1] and cols[gap]

    def cheapest(row_of):  # each row's least w(row, free) − own[row] over the free columns given it
        least, given = np.full(k, np.inf), (row_of >= 0) & (row_of < k)
        row_of, columns = row_of[given], free[given]
        if len(row_of):  # row_of ascends with the free columns: each row's are one run
            starts = np.flatnonzero(np.r_[True, row_of[1:] != row_of[:-1]])
            least[row_of[starts]] = np.minimum.reduceat(w(row_of, columns) - own[row_of], starts)
        return least

    # the cheapest free column of row q's gaps: left of p_q (after p_{q−1}) and right of it
    to_left, to_right = cheapest(gap), cheapest(gap - 1)
    # row r taking the column of the row below (A_r) or above (B_r), then that row freeing its own
    below, above = np.zeros(k), np.zeros(k)
    below[1:] = w(rows[1:], cols[:-1]) - own[1:]
    above[:-1] = w(rows[:-1], cols[1:]) - own[:-1]
    # L_r = min(to_left_r, A_r + L_{r−1}) and R_r = min(to_right_r, B_r + R_{r+1}) as prefix minima
    down = np.cumsum(below)
    left = down + np.minimum.accumulate(to_left - down)
    up = np.cumsum(above[::-1])[::-1]  # Σ_{t ≥ r} B_t
    right = up + np.minimum.accumulate((to_right - up)[::-1])[::-1]
    d = np.minimum(left, right)
    v = np.zeros(m)
    v[cols] = -d
    return own + d, v
