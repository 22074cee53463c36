"""``cost_limit``: lapjv's rule for leaving rows unassigned, as a transform of the problem.

lapjv (lap/lapx) extends an n × m matrix C to the (n + m) × (n + m) problem

    [ C          L/2 ]        L/2 everywhere in the two off-diagonal blocks,
    [ L/2        0   ]        0 in the bottom-right block,

so a row takes a real column only when that is cheaper than L overall; a row that takes a dummy
column is unassigned (−1 in ``x``). The pipeline solves the augmented matrix like any other
(lapcli.pipeline) and :meth:`CostLimit.solution` maps the answer back.

Integer costs with an integral L are solved exactly: the augmented problem minimises
Σ over the pairs of (c − L), so shifting C and L by the least cost t leaves its answers unchanged,
and so does doubling (2(C − t) and L − t, all integers). L − t is clamped to [−1, min(n, m)·S + 1]
(S the spread of C): below 0 every pair costs more than L and no row is assigned, and above
min(n, m)·S any matching of fewer pairs gains by an augmenting path (at most min(n, m) pairs of
cost ≤ S in place of one fewer pair, less L), so every optimum has min(n, m) pairs and the least
cost among those, whatever L is. Costs near the ends of int64 or uint64 then stay exact, or are
refused when even their spread is too wide. A non-integral L over integer costs has the answers of
⌊L⌋ + 1/2: the least cost of k pairs is convex in k with integer steps, so the optimum takes
exactly the steps below L, and no step lies between ⌊L⌋ and L (4(C − t) and 2(⌊L⌋ − t) + 1, exact
again). Float costs make a float64 problem, solved within the float tolerance like any other, L
lowered to a little above t + min(n, m)·S where it is above (the same answers, and a tolerance that
follows the costs, not L).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

from .errors import LapInputError, TooWideError
from .problem import array_module, check_entries, prepare
from .sums import exact_sum
from .results import Solution
from .work import INT64_SAFE
from .work_dtypes import floats_as_integers, requested_dtype


def augmented_matrix(cost: np.ndarray, cost_limit: int | float, rounded_to=None) -> np.ndarray:
    """lapjv's (n + m)² problem of the host costs ``cost`` under ``cost_limit`` (a Python int or
    float): exact int64 for integer costs (the module's docstring), float64 for float costs
    (``rounded_to``: the float dtype the work will round them to, which the ceiling must outlast)."""
    n, m = cost.shape
    if cost.dtype.kind in "biu":
        if isinstance(cost_limit, int) or float(cost_limit).is_integer():
            return _integer_augmented(cost, int(cost_limit), scale=1)
        return _integer_augmented(cost, 2 * math.floor(cost_limit) + 1, scale=2)  # ⌊L⌋ + 1/2, doubled
    extended = np.full((n + m, n + m), min(cost_limit, _float_ceiling(cost, rounded_to)) / 2.0, dtype=np.float64)
    extended[:n, :m] = cost
    extended[n:, m:] = 0
    return extended


def _float_ceiling(cost: np.ndarray, rounded_to=None) -> float:
    """A limit above which every float limit has the same answers: the least finite cost t plus
    min(n, m) times their spread S, a little more (the integer clamp's argument, above). A limit far
    above it made the augmented problem's float tolerance follow L: 3 × 15 U[0, 1) costs under
    cost_limit=1e20 came back 0.318 against the optimum's 0.201, within a tolerance of 8e5. t and S
    are those of the costs as ``rounded_to`` holds them (the problem solved); the little more is
    2⁻²⁰ of k·S and of the largest |cost| (8 float32 ulps), and at least 16 of the work type's
    smallest normal numbers: a margin the work rounded away left L/2 equal to c/2, and "assign" tied
    with "leave out" (3 × 3 sevens, or zeros, under cost_limit=8 as float32 came back with rows left
    out). k·S, not (k + 1)·S: float32 costs near its largest, whose k·S/2 fits, keep L/2 in range."""
    if rounded_to is not None:
        with np.errstate(over="ignore"):  # past the dtype's range: inf, which the work refuses itself
            cost = cost.astype(rounded_to)
    finite = cost[np.isfinite(cost)].astype(np.float64)
    if not finite.size:  # every pair forbidden: every limit leaves every row out, 0 as well as any
        return 0.0  # (inf made L/2 the limit's: 5e299 in float32 work was refused as an overflow)
    with np.errstate(over="ignore"):  # past float64's range the ceiling is inf: every limit is below it
        least, spread = float(finite.min()), float(finite.max() - finite.min())
        margin = max(max(abs(least), abs(least + spread)) * 2.0**-20, 16 * float(np.finfo(rounded_to or np.float64).tiny))
        return least + min(cost.shape) * spread * (1 + 2.0**-20) + margin


def _integer_augmented(cost: np.ndarray, scaled_limit: int, scale: int) -> np.ndarray:
    """2·scale·(C − t) and the clamped scale·(L − t) (the module's docstring) in int64, exactly;
    ``scaled_limit`` is scale·L, an integer (scale 2 for a half-integral L)."""
    n, m = cost.shape
    values = cost.astype(np.int64) if cost.dtype.kind == "b" else cost
    least = int(values.min()) if values.size else 0
    spread = int(values.max()) - least if values.size else 0
    shifted_limit = min(max(scaled_limit - scale * least, -scale), scale * (min(n, m) * spread + 1))
    if max(2 * scale * spread, shifted_limit) >= INT64_SAFE:  # the pipeline's exact int64 work would refuse it too
        raise LapInputError(f"integer costs spread over {spread:,} are too wide for an exact cost_limit solve "
                            "(lapcli does not round integers)")
    extended = np.zeros((n + m, n + m), dtype=np.int64)
    extended[:n, m:] = extended[n:, :m] = shifted_limit
    if values.dtype.kind == "u":  # in uint64: exact, every cost is ≥ least
        shifted = (values - values.dtype.type(least)).astype(np.int64)
    else:  # in int64 (int8's −128 − 127 would wrap in int8): exact, the spread is below 2^62
        shifted = values.astype(np.int64) - least
    extended[:n, :m] = shifted * (2 * scale)
    return extended


@dataclass
class CostLimit:
    """The caller's n × m costs (on the host), the limit, and the augmented matrix to solve."""

    cost: np.ndarray
    limit: int | float
    matrix: np.ndarray

    @classmethod
    def of(cls, cost, cost_limit: float, maximize: bool, dtype=None) -> CostLimit | None:
        """Validate; None for an infinite limit (lapjv's default: no row is left out) and for costs
        without a pair (no row or no column: every row is unassigned either way, and the augmented
        (n + m)² problem of a 0 × 20,000 matrix took 27 s and 6 GB). Float costs to be solved as
        integers (``dtype``) are augmented as integers: L/2 beside them is then exact."""
        if maximize:
            raise LapInputError("cost_limit applies to minimisation, as in lapjv; negate the costs instead")
        try:
            if isinstance(cost_limit, (bool, np.bool_, str, bytes)) or (isinstance(cost_limit, np.ndarray)
                                                                         and cost_limit.dtype.kind not in "iuf"):
                raise TypeError  # np.array("3") too (a torch scalar tensor is read by float())
            if getattr(cost_limit, "ndim", 0):
                raise TypeError  # one number, not an array of one: torch's float() reads tensor([3.]) too
            # an integer limit stays an exact Python int (float() rounds beyond 2^53)
            limit = int(cost_limit) if isinstance(cost_limit, (int, np.integer)) else float(cost_limit)
        except (TypeError, ValueError):
            raise LapInputError(f"cost_limit must be a number, got {cost_limit!r}") from None
        if limit == math.inf:
            return None
        if not isinstance(limit, int) and not math.isfinite(limit):
            raise LapInputError(f"cost_limit must be a finite number or +inf, got {cost_limit}")
        arr = prepare(cost, check=False).original
        xp = array_module(arr)
        check_entries(arr[None], xp, maximize=False)
        host = arr if xp is np else xp.asnumpy(arr)
        if isinstance(limit, int) and host.dtype.kind == "f" and abs(limit) > sys.float_info.max:
            raise LapInputError("cost_limit is beyond float64's range, which float costs are solved in")
        if 0 in host.shape:
            return None
        requested, whole = requested_dtype(dtype), host
        rounded_to = np.float32 if requested == "float32" else None
        if (host.dtype.kind == "f" and requested in ("int32", "int64")
                and not (min(limit, _float_ceiling(host)) / 2.0).is_integer()):
            # the float problem's L/2 would be refused as no integer: augmented as integers instead (which
            # doubles the spread, so only then: an int32 problem of whole L/2 keeps its room)
            whole = floats_as_integers(host, np, requested, not bool(np.isfinite(host).all()))
        return cls(host, limit, augmented_matrix(whole, limit, rounded_to))

    def explain(self, error: Exception) -> Exception:
        """The augmented problem's refusal in the caller's terms: a range an int dtype does not hold is
        that problem's (its costs shifted and doubled beside the limit), and a fractional limit over
        integers doubles them once more (⌊L⌋ + 1/2), which an integral limit does not. Float costs
        augmented as floats are neither shifted nor doubled: their refusal is the costs' own."""
        if "do not fit" in str(error) and self.matrix.dtype.kind in "iu":
            return type(error)(f"{error} (under cost_limit, lapjv's augmented problem's: the costs less the "
                               "least, doubled, beside the limit)")
        if not isinstance(error, TooWideError) or self.cost.dtype.kind not in "biu" or isinstance(self.limit, int) \
                or float(self.limit).is_integer():
            return error
        return type(error)(f"{error}; a cost_limit with a fractional part doubles the integers once more "
                           "(solved as ⌊L⌋ + 1/2): an integral cost_limit leaves them room")

    def solution(self, inner: Solution) -> Solution:
        """The augmented problem's answer as the caller's: real pairs only, the caller's objective."""
        n, m = self.cost.shape
        real = (inner.row_ind < n) & (inner.col_ind < m)
        rows, cols = inner.row_ind[real], inner.col_ind[real]
        total = exact_sum(self.cost[rows, cols][None])[0]
        objective = total.item() if isinstance(total, np.generic) else total
        report = inner.report
        report.objective, report.n_rows, report.n_cols = objective, n, m
        limit = f"{self.limit:g}" if abs(self.limit) <= sys.float_info.max else "beyond float64's range"
        report.notes = [*report.notes, f"cost_limit {limit}: solved as lapjv's ({n + m})² augmented problem; "
                        f"{n - len(rows)} row(s) left unassigned; the certificate is that problem's"]
        return Solution(row_ind=rows, col_ind=cols, objective=objective, report=report, duals=None)
