"""Assignment between two point sets: the cost of pairing a_i with b_j is a distance between their
coordinates (scipy.spatial.distance.cdist's metrics and meanings), so the n × m matrix need not
exist. ``PointProblem`` is the model every engine reads, as ``lapcli.problem.Problem`` is for a
matrix: the checked coordinates, the metric, the orientation (the smaller set is the work's rows,
as a tall matrix is transposed), and the NumPy reference of the costs.

Engines with ``capabilities.points`` compute the costs where they read them (engine ``cuda-sap``:
kernels/costs.cuh); every other engine solves ``dense()``, the same costs as a matrix, through the
matrix pipeline, and gets the same answer while that matrix fits in memory. Both compute each
cost as :func:`costs` does: cdist's values for sqeuclidean, euclidean, cityblock and chebyshev;
within an ulp or two for minkowski (pow) and cosine (1 − x·y of the points scaled to unit length,
clamped to [0, 2] as cdist clamps it: parallel points cost an ulp or so, never below 0).
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .arrays import Origin, all_true, as_array, check_dense, host
from .errors import LapInputError
from .sums import float_sum

METRICS = ("sqeuclidean", "euclidean", "cityblock", "chebyshev", "minkowski", "cosine")
MAX_DIM = 32  # coordinates a point may have (kernels/costs.cuh keeps a row's point in registers)
HOST_CHUNK_PAIRS = 1 << 22  # pairs per chunk of the NumPy passes (~32 MB of float64)


@dataclass
class PointProblem:
    """Two checked point sets as float64 arrays (NumPy, or CuPy when the input was on the GPU).

    ``rows`` and ``columns`` are the work's sides: ``rows`` is the smaller set (k ≤ m), so a tall
    problem (n > m) has ``transposed`` True and its work rows are the caller's b."""

    a: Any
    b: Any
    metric: str  # one of METRICS; minkowski with p = 1, 2 or inf is named by its own metric
    p: float  # minkowski's exponent (2.0 and unused for the others)
    maximize: bool
    origin: Origin

    @property
    def xp(self):
        return np if isinstance(self.a, np.ndarray) else __import__("cupy")

    @property
    def n_rows(self) -> int:
        return int(self.a.shape[0])

    @property
    def n_cols(self) -> int:
        return int(self.b.shape[0])

    @property
    def dim(self) -> int:
        return int(self.a.shape[1])

    @property
    def metric_text(self) -> str:
        """The metric as a report names it: minkowski with its p, which the costs depend on (every digit
        of it: 3.14159265 is not 3.14159)."""
        if self.metric != "minkowski":
            return self.metric
        return f"minkowski (p = {self.p:g})" if float(f"{self.p:g}") == self.p else f"minkowski (p = {float(self.p)!r})"

    @property
    def transposed(self) -> bool:
        return self.n_rows > self.n_cols

    @property
    def rows(self):
        return self.b if self.transposed else self.a

    @property
    def columns(self):
        return self.a if self.transposed else self.b

    @property
    def is_empty(self) -> bool:
        return self.n_rows == 0 or self.n_cols == 0

    @property
    def on_a_line(self) -> bool:
        """Sets :attr:`along_a_line` of equal size: the sorted pairs are optimal (engine ``sorted``)."""
        return self.n_rows == self.n_cols and self.along_a_line

    @functools.cached_property  # read by the mirror, auto's route and engine sorted: one host pass
    def along_a_line(self) -> bool:
        """1-D sets, nonempty, whose computed costs are a convex function of x − y: between both
        sets sorted they are then a Monge array, whose optimum does not cross (engine ``sorted``).
        Every metric's are, unless a power of a difference underflows (cdist's (|d|^p)^(1/p) reads
        0 for d ≠ 0 below 2^(−1022/p): p = 50 already at 10⁻⁶): the smallest nonzero difference is
        at least the spacing of the smallest nonzero coordinate. Nor where a total of k costs can pass
        float64's range: the band programme and the chained duals cannot rank infinite sums. Nor
        minkowski below p = 1, whose outer pow(·, 1/p) scales pow's rounding by 1/p, beyond what the
        certificate's tolerance allows a pairing taken from the order rather than from the costs."""
        if self.dim != 1 or self.is_empty or (self.metric == "minkowski" and self.p < 1):
            return False
        with np.errstate(over="ignore"):
            if not math.isfinite(self.largest_cost() * (min(self.n_rows, self.n_cols) + 1)):
                return False
        power = {"sqeuclidean": 2.0, "euclidean": 2.0, "minkowski": self.p}.get(self.metric)
        if power is None:  # |x − y|, its maximum over one coordinate, or cosine's 1 − (±1)(±1)
            return True
        magnitudes = np.abs(np.concatenate([self.host(self.a)[:, 0], self.host(self.b)[:, 0]]))
        nonzero = magnitudes[magnitudes > 0]
        return not nonzero.size or power * math.log2(float(np.spacing(nonzero.min()))) > -1000.0

    @property
    def sign(self) -> float:
        """The work minimises sign · c: −1 when maximising."""
        return -1.0 if self.maximize else 1.0

    def host(self, points) -> np.ndarray:
        return host(points)

    def largest_cost(self) -> float:
        """An upper bound of every |c(i, j)|, from the two sets' bounding boxes (no pass over the
        pairs): the float tolerance's scale (lapcli.work.float_eps)."""
        if self.metric == "cosine":
            return 2.0
        xp = self.xp
        low = xp.minimum(self.a.min(axis=0), self.b.min(axis=0))
        high = xp.maximum(self.a.max(axis=0), self.b.max(axis=0))
        extent = self.host(high - low)[None, :]
        return float(costs(extent, np.zeros_like(extent), self.metric, self.p)[0])

    def dense(self, on_device: bool = False):
        """The caller's n × m cost matrix, in the inputs' array library, or (``on_device``) built
        on the current GPU from the coordinates copied there."""
        if on_device:
            import cupy

            return distance_matrix(cupy.asarray(self.a), cupy.asarray(self.b), self.metric, self.p)
        return distance_matrix(self.a, self.b, self.metric, self.p)

    def notes(self) -> list[str]:
        return []

    def tolerance(self) -> float:
        """The certificate's zero of a reduced cost (lapcli.work.float_eps over the largest cost).
        minkowski below p = 1: the kernels' pow and NumPy's differ by an ulp or two, which the outer
        pow(·, 1/p) scales by 1/p, and the host's certificate reads the costs the device's duals
        came from so: the tolerance grows by 1/p, over at least d + 4 columns."""
        from .work import float_eps

        if self.metric == "minkowski" and self.p < 1:
            return float_eps(max(self.n_rows, self.n_cols, self.dim + 4), self.largest_cost()) / self.p
        return float_eps(max(self.n_rows, self.n_cols), self.largest_cost())

    def assignment_from_work(self, col_of_row) -> tuple[np.ndarray, np.ndarray]:
        """(row_ind, col_ind) of the caller's sets from the work's column of each row, sorted by
        row as scipy's."""
        col_of_row = np.asarray(col_of_row, dtype=np.int64)
        rows = np.arange(len(col_of_row), dtype=np.int64)
        if not self.transposed:
            return rows, col_of_row
        order = np.argsort(col_of_row, kind="stable")
        return col_of_row[order], rows[order]

    def duals_from_work(self, u, v) -> tuple[np.ndarray, np.ndarray]:
        """The work's duals (host arrays) as the caller's (rows of a, columns of b): c − u − v ≥ 0
        with equality on the assignment when minimising, ≤ 0 when maximising."""
        row_duals, col_duals = (v, u) if self.transposed else (u, v)
        if self.maximize:
            row_duals, col_duals = -row_duals, -col_duals
        return np.asarray(row_duals, dtype=np.float64), np.asarray(col_duals, dtype=np.float64)

    def objective(self, rows: np.ndarray, cols: np.ndarray) -> float:
        """Σ c(a_row, b_col) of the caller's pairs, correctly rounded (fsum) from the NumPy costs: as
        a dense solve's, infinite where the total passes float64's range (costs near 1.8e308)."""
        if not len(rows):
            return 0.0
        a, b = self.host(self.a), self.host(self.b)
        return float_sum(costs(a[rows], b[cols], self.metric, self.p).tolist())


def costs(x, y, metric: str, p: float = 2.0):
    """c(x, y) over the last axis of two broadcastable arrays of coordinates (NumPy or CuPy):
    the reference of the kernels' costs (kernels/costs.cuh), summed in the coordinates' order
    with each operation rounded on its own, so that they are the same numbers (minkowski's pow
    aside); cdist's meanings (cosine on points already of unit length)."""
    xp = np if isinstance(x, np.ndarray) else __import__("cupy")
    total = None
    for c in range(x.shape[-1]):
        if metric == "cosine":
            term = x[..., c] * y[..., c]
        else:
            term = xp.abs(x[..., c] - y[..., c])
            if metric in ("sqeuclidean", "euclidean"):
                term = term * term
            elif metric == "minkowski":
                term = xp.power(term, p)
        if total is None:
            total = term
        elif metric == "chebyshev":
            total = xp.maximum(total, term)
        else:
            total = total + term
    if metric == "euclidean":
        return xp.sqrt(total)
    if metric == "minkowski":
        return xp.power(total, 1.0 / p)
    return xp.clip(1.0 - total, 0.0, 2.0) if metric == "cosine" else total  # cdist's clamp: 0 for parallel points


def minkowski_margin(p: float) -> float:
    """The share of itself a minkowski lower bound is lowered by (kernels/costs.cuh's box_bound):
    each pow may be off by an ulp or two, and the outer pow(total, 1/p) scales the total's error
    by 1/p where p < 1."""
    return 2.0**-40 * max(1.0, 1.0 / p)


def distance_matrix(a, b, metric: str, p: float = 2.0):
    """The n × m costs of two point sets (NumPy or CuPy, in row chunks of :func:`costs`): the
    same numbers as the kernels compute, so that both routes solve the same problem."""
    xp = np if isinstance(a, np.ndarray) else __import__("cupy")
    n, m = a.shape[0], b.shape[0]
    out = xp.empty((n, m), dtype=np.float64)
    step = max(1, HOST_CHUNK_PAIRS // max(m, 1))
    for begin in range(0, n, step):
        out[begin:begin + step] = costs(a[begin:begin + step, None, :], b[None, :, :], metric, p)
    return out


def check_metric(metric: str, p: float | None) -> tuple[str, float]:
    """(metric, p) checked; minkowski with p = 1, 2 or inf becomes cityblock, euclidean or
    chebyshev (the same costs, and the kernels' cheaper forms)."""
    name = metric.lower() if isinstance(metric, str) else None  # in any case, as cdist's
    if name not in METRICS:
        raise LapInputError(f"unknown metric {metric!r}; use one of {', '.join(METRICS)}")
    metric = name
    if metric != "minkowski":
        if p is not None:
            raise LapInputError(f"p is minkowski's exponent; metric {metric!r} takes none")
        return metric, 2.0
    p = 2.0 if p is None else p.item() if getattr(p, "ndim", None) == 0 else p  # a 0-d array or tensor: its number
    if not isinstance(p, numbers.Real) or isinstance(p, bool) or not p > 0:
        raise LapInputError(f"minkowski needs a number p > 0, not {p!r}")
    try:
        p = float(p)
    except OverflowError:  # an int past float64's range
        raise LapInputError("minkowski's p is past float64's range; p = inf is chebyshev") from None
    named = {1.0: "cityblock", 2.0: "euclidean", math.inf: "chebyshev"}.get(p)
    return (named, 2.0) if named else ("minkowski", p)


def _checked_points(points: Any, name: str):
    """A point set as a C-contiguous (count, d) float64 array of its own library; refuses what is
    not one (one line each: bad input)."""
    check_dense(points, f"the points of {name}", points=True)
    try:
        array, origin = as_array(points)
    except ValueError:  # NumPy's words for a ragged list ("setting an array element with a sequence")
        if not isinstance(points, (list, tuple)):
            raise
        raise LapInputError(f"{name} is not an (n, d) array: its points differ in length") from None
    if array.ndim == 1:
        raise LapInputError(f"{name} is 1-D with {array.shape[0]} values: give points as an (n, d) array "
                            "(a column for d = 1)")
    if array.ndim != 2:
        raise LapInputError(f"{name} must be an (n, d) array of coordinates, got {array.ndim}-D")
    if array.dtype.kind not in "biuf":
        raise LapInputError(f"{name} has {array.dtype} coordinates; give numbers (float32 or float64)")
    if not 1 <= array.shape[1] <= MAX_DIM:
        raise LapInputError(f"{name} has {array.shape[1]} coordinates a point; 1 to {MAX_DIM} are taken")
    xp = np if isinstance(array, np.ndarray) else __import__("cupy")
    with np.errstate(over="ignore"):  # a long double past float64's range: refused below
        given, array = array, xp.ascontiguousarray(array, dtype=np.float64)
    if array.size and not all_true(xp.isfinite(array)):
        if given.dtype.itemsize > 8 and all_true(xp.isfinite(given)):  # long double past float64
            raise LapInputError(f"{name} has a coordinate beyond float64's range (±1.8e308), which costs are computed in")
        raise LapInputError(f"{name} has a NaN or infinite coordinate")
    return array, origin


def prepare_points(a: Any, b: Any, metric: str = "sqeuclidean", *, p: float | None = None,
                   maximize: bool = False, names: tuple[str, str] = ("a", "b")) -> PointProblem:
    """Check two point sets and a metric (bad input raises LapInputError with one line): both
    (count, d) arrays of the same d ≤ MAX_DIM and library, finite; cosine points of nonzero length
    are scaled to unit length here, once."""
    metric, p = check_metric(metric, p)
    if not (isinstance(names, (tuple, list)) and len(names) == 2 and all(isinstance(name, str) for name in names)):
        raise LapInputError(f"names must be two strings, what messages call the sets, not {names!r}")
    a, origin = _checked_points(a, names[0])
    b, origin_b = _checked_points(b, names[1])
    if origin.on_gpu != origin_b.on_gpu:
        raise LapInputError(f"{names[0]} and {names[1]} must both be on the host or both on the GPU")
    if a.shape[1] != b.shape[1]:
        words = "coordinate" if a.shape[1] == 1 else "coordinates"
        raise LapInputError(f"{names[0]} has {a.shape[1]} {words} a point and {names[1]} has {b.shape[1]}; "
                            "they must match")
    if metric == "cosine":
        a, b = _unit_length(a, names[0]), _unit_length(b, names[1])
    problem = PointProblem(a, b, metric, p, bool(maximize), origin)
    # every cost and every partial sum of one is at most the bounding box's (largest_cost): where that
    # overflows, some pair's may, and an infinite cost would read as a forbidden pair
    with np.errstate(over="ignore"):
        bounded = not (a.size and b.size) or math.isfinite(problem.largest_cost())
    with np.errstate(over="ignore"):  # p's doing where cityblock's (any p ≥ 1 is below it) is finite
        p_overflows = not bounded and metric == "minkowski" and math.isfinite(
            replace(problem, metric="cityblock").largest_cost())
    if p_overflows and p < 1:  # d^(1/p) times the box's widest side
        raise LapInputError(f"the minkowski distance with p = {p:g} across the points' bounding box (up to "
                            "d^(1/p) times its widest side) overflows float64, and lapcli bounds every cost and "
                            "tolerance by it; a larger p keeps it finite")
    if p_overflows:  # a side's p-th power past float64's range (cdist's distance there is inf)
        raise LapInputError(f"the minkowski distance with p = {p:g} across the points' bounding box overflows "
                            "float64 in its p-th powers, and lapcli bounds every cost and tolerance by it; a "
                            "smaller p, or coordinates scaled down, keeps it finite")
    if not bounded:
        raise LapInputError(f"the coordinates span too wide a range: the {metric} distance across their bounding "
                            "box overflows float64, and lapcli bounds every cost and tolerance by it; scale them down")
    return problem


def _unit_length(points, name: str):
    """Each point divided by its length, computed from the point scaled by its largest |coordinate|
    first, so that no square over- or underflows (1e155 or 1e-200 coordinates)."""
    xp = np if isinstance(points, np.ndarray) else __import__("cupy")
    largest = xp.abs(points).max(axis=1) if points.shape[0] else xp.ones(0)
    if points.shape[0] and not all_true(xp.greater(largest, 0)):
        raise LapInputError(f"{name} has a point at the origin: its cosine distance is undefined")
    scaled = points / largest[:, None]
    return scaled / xp.sqrt((scaled * scaled).sum(axis=1))[:, None]
