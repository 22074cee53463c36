"""The optimality certificate: every answer of an engine with duals is proved before it is returned.

For min Σ c[i, σ(i)] over permutations σ, duals u (rows) and v (columns) with

    c[i, j] − u[i] − v[j] ≥ −tol   for every i, j          (dual feasibility)
    c[i, σ(i)] − u[i] − v[σ(i)] ≤ tol   for every i        (complementary slackness)

prove σ optimal up to 2·k·tol: for any permutation π, Σ c[i, π(i)] ≥ Σ u + Σ v − k·tol ≥
Σ c[i, σ(i)] − 2·k·tol. For integer costs tol = 0 and the proof is exact.

The check reads the work matrix (lapcli.work), whose float64 costs are c less their row's least
(and column's, for a square), each difference rounded: by at most 2⁻⁵³ of the row-reduced cost r,
and of the work cost w for the column reduction. What the proof says of the caller's costs,
``objective_within``, adds that: over an assignment the roundings sum to 2⁻⁵³·(R + W), and a
better assignment π would have R(π) ≤ R(σ) too, so the answer's objective exceeds the optimum by
at most 2·max(k, m)·tol + 2⁻⁵¹·R(σ), R(σ) the answer's total above its rows' least costs. Without
a column reduction R = W ≤ k·S, below tol (tol = m·S·2⁻⁵⁰): ``(2·max(k, m) + 1)·tol`` holds it.
With one, W can be far below R ([[2, −1e20], [1e20, 1000]] reduces to zeros: the answer 1002 is
within 2⁻⁵¹·1e20 of the optimum 0, not within tol): R(σ) is bounded from the duals and the column
offsets (:func:`column_reduction_rounding`). The check's own float64 subtractions round by at
most 2⁻⁵²·(max|u| + max|v| + tol) where a slack is near the bounds (:func:`check_rounding`):
``objective_within`` is proved at tol plus that (duals shifted by ±t, u + t and v − t, read the
same slacks but round by t·2⁻⁵²); integer slacks are exact in int64, the work's costs below 2⁶²
(lapcli.work) and duals of 2⁶² or more refused. The check is one read
pass over the matrix, on the device that solved it (CuPy) or on the host (NumPy, in row chunks).
Rectangular work matrices (batch engines solve k × m, k ≤ m, natively) also need v[j] ≤ tol for
every column and v[j] ≥ −tol for the columns no row took, the dual constraints of the columns
that may stay free. The batch engine runs the same checks per problem inside its solve launch
(kernels/batch_lap.cu, certify_problem: each group re-reads its problem's costs once it has
solved it), with tol = m · max|c| · 2^-50 per problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .arrays import all_true
from .errors import SolverError

# The host check's chunk, in entries (a row at least; the dual recovery's blocks too): 512 KB of
# float64 slacks stay in the cache through their four passes (the copy, less u, less v, the
# minimum); chunks of 32 MB went to memory each time: 1000 × 3000 U[0, 1) 5.7 -> 4.5 ms,
# 4000 × 4000 46 -> 30 ms (2-core CI machine).
HOST_CHUNK_ELEMENTS = 1 << 16
INT64_DUALS = 2**62  # integer duals at or past it are refused: their slacks could wrap (certify)
# the slacks are the work's, which minimises: a maximisation's are of −cost, with the duals negated
MINIMISED = "of the costs minimised (maximising: of −cost, −u, −v)"
NO_PAIRS = "empty problems: nothing to prove"  # a batch whose every member lacks rows or columns, on any engine


@dataclass
class Certificate:
    certified: bool
    min_slack: float  # min over all entries of c − u − v (≥ −tolerance)
    max_assigned_slack: float  # max over assigned pairs of |c − u − v| (≤ tolerance)
    tolerance: float
    ms: float
    where: str  # "device" or "host"
    objective_within: float = 0.0  # the answer's objective exceeds the optimum by at most this (module docstring)

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked": "u_i + v_j <= c_ij everywhere, equality on the assignment (complementary slackness), "
                       + MINIMISED,
            "min_slack": _plain(self.min_slack),
            "max_assigned_slack": _plain(self.max_assigned_slack),
            "tolerance": self.tolerance,
            "objective_within": float(self.objective_within),
            "ms": round(self.ms, 3),
            "where": self.where,
        }


def _plain(x):
    return int(x) if isinstance(x, (int, np.integer)) else float(x)


def not_certified(why: str) -> dict[str, Any]:
    return {"checked": None, "why": why}


_C_TYPES = {"int32": "int", "int64": "long long", "float32": "float", "float64": "double"}

# One block per row: the row's smallest reduced cost and its assigned pair's |reduced cost|, so
# that the whole check is one launch and one copy of 2·k values (CuPy's reductions and fancy
# indexing took ~0.6 ms at k = 1024 on an H100, most of it launches and synchronisations).
_ROW_SLACKS_SOURCE = r"""
// The smaller of a and b, NaN if either is NaN (so that NaN duals fail the check below).
template <typename D> __device__ __forceinline__ D least(D a, D b) { return (b != b || b < a) ? b : a; }

template <typename T, typename D>
__global__ void row_slacks(const T* __restrict__ cost, const D* __restrict__ u, const D* __restrict__ v,
                           const long long* __restrict__ col, int k, int m, D largest, D* __restrict__ out) {
    __shared__ D scratch[32];
    for (int i = blockIdx.x; i < k; i += gridDim.x) {
        const T* row = cost + (long long)i * m;
        const D ui = u[i];
        D smallest = largest;
        for (int j = threadIdx.x; j < m; j += blockDim.x) smallest = least(smallest, (D)row[j] - ui - v[j]);
        for (int offset = 16; offset > 0; offset >>= 1)
            smallest = least(smallest, __shfl_xor_sync(0xffffffffu, smallest, offset));
        if ((threadIdx.x & 31) == 0) scratch[threadIdx.x >> 5] = smallest;
        __syncthreads();
        if (threadIdx.x == 0) {
            for (int w = 1; w < (int)(blockDim.x >> 5); ++w) smallest = least(smallest, scratch[w]);
            const long long j = col[i];
            const D assigned = j >= 0 && j < m ? (D)row[j] - ui - v[j] : largest;  // no column: not tight
            out[2LL * i] = smallest;
            out[2LL * i + 1] = assigned < 0 ? -assigned : assigned;
        }
        __syncthreads();  // scratch is reused by the next row
    }
}
"""
ROW_SLACKS_THREADS = 256


@lru_cache(maxsize=None)
def row_slacks_program(cost_dtype: str, exact: bool):
    """The read pass for one cost type, compiled and loaded by lapcli.cuda.runtime; its parameters
    (cost, u, v, col, k, m, largest, out) as the runtime's slot letters."""
    from .cuda.runtime import Program

    name = f"row_slacks<{_C_TYPES[cost_dtype]}, {'long long' if exact else 'double'}>"
    return Program("certificate", _ROW_SLACKS_SOURCE, (), ((name, name, f"ppppii{'q' if exact else 'd'}p"),))


def _device_slacks(cost, col, u, v, dual_dtype):
    """(min over all pairs of c − u − v, max over assigned pairs of |c − u − v|) of a C-contiguous
    CuPy work matrix: one launch, one copy back."""
    import cupy

    k, m = cost.shape
    exact = dual_dtype is np.int64
    out = cupy.empty(2 * k, dtype=dual_dtype)
    from .cuda.runtime import current_stream, load

    largest = int(np.iinfo(np.int64).max) if exact else float("inf")
    program = row_slacks_program(cost.dtype.name, exact)
    kernels, _load_ms = load(program)
    u, v, col = (cupy.ascontiguousarray(array) for array in (u, v, col))  # kept alive until the copy back
    kernels[program.kernels[0][0]].launch(
        min(k, 1024), ROW_SLACKS_THREADS,
        (cost.data.ptr, u.data.ptr, v.data.ptr, col.data.ptr, k, m, largest, out.data.ptr), stream=current_stream())
    host = out.get()
    return host[0::2].min(), host[1::2].max()


@lru_cache(maxsize=None)
def _device_min_slack_kernel(exact: bool):
    """min over (i, j) of c − u − v in one fused pass (no k × m temporary), broadcasting u and v."""
    import cupy

    largest = "0x7fffffffffffffffLL" if exact else "__longlong_as_double(0x7ff0000000000000LL)"
    return cupy.ReductionKernel(
        "T c, D u, D v", "D slack_min", "(D)c - u - v", "min(a, b)", "slack_min = a", largest,
        "lapcli_min_slack_exact" if exact else "lapcli_min_slack",
    )


def certify(cost, col_of_row, u, v, tolerance: float, engine: str, row_min_slack=None) -> Certificate:
    """Check the duals (u, v) of a k × m work matrix ``cost`` (NumPy or CuPy, k ≤ m) for the
    assignment ``col_of_row``; raise SolverError naming what failed (no answer is returned).
    ``row_min_slack``: each row's minimum of c − u − v, when the read pass already ran on the
    device that solved (the host route's row_min_slack kernel), so the host matrix is not read again."""
    start = time.perf_counter()
    on_device = type(cost).__module__.startswith("cupy")
    exact = cost.dtype.kind in "iu"
    dual_dtype = np.int64 if exact else np.float64
    if on_device:
        import cupy as xp

        u = xp.asarray(u, dtype=dual_dtype)
        v = xp.asarray(v, dtype=dual_dtype)
        col = xp.asarray(col_of_row, dtype=xp.int64)
        if cost.shape[0] and cost.flags.c_contiguous and cost.dtype.name in _C_TYPES:
            min_slack, max_assigned = _device_slacks(cost, col, u, v, dual_dtype)
        else:
            min_slack, max_assigned = _device_min_slack(cost, u, v, dual_dtype), None
    else:
        xp = np
        u = np.asarray(u, dtype=dual_dtype)
        v = np.asarray(v, dtype=dual_dtype)
        col = np.asarray(col_of_row, dtype=np.int64)
        if row_min_slack is not None:
            minima = np.asarray(row_min_slack, dtype=dual_dtype)
            min_slack = minima.min() if minima.size else np.zeros((), dual_dtype)
        else:
            min_slack = _host_min_slack(cost, u, v, dual_dtype)
        max_assigned = None
    k, m = cost.shape
    if max_assigned is None:
        assigned = cost[xp.arange(k), col].astype(dual_dtype) - u - v[col]
        max_assigned = xp.abs(assigned).max() if k else xp.zeros((), dual_dtype)
    where = "device" if on_device or row_min_slack is not None else "host"
    # int64 slacks wrap past 2^63: work costs stay below 2^62 (lapcli.work.INT64_SAFE; int32 far
    # below), so duals below it too keep every c - u - v exact, without reading the costs again
    if exact and largest_magnitude(u) + largest_magnitude(v) >= INT64_DUALS:
        raise SolverError(f"the {engine} engine's answer failed its optimality certificate: its duals are too "
                          "large for exact int64 slacks (a bug, please report it)")
    return judged(min_slack, max_assigned, v, col, m, tolerance, engine, start, where,
                  0.0 if exact else check_rounding(u, v, tolerance))


def for_rounded_costs(certificate: dict, notes: list[str]) -> dict:
    """A certificate of costs rounded to a narrower dtype, as asked (a work note says so): it proves
    the rounded problem's optimum, so its bound on the objective, which sums the given costs, is
    dropped and what it proves said (``of``); any other certificate as it is."""
    from .work import ROUNDED_AS_ASKED

    if not certificate.get("checked") or not any(ROUNDED_AS_ASKED in note for note in notes):
        return certificate
    return {**certificate, "objective_within": None, "of": "the costs as rounded to the dtype asked for"}


def judged(min_slack, max_assigned, v, col, m: int, tolerance: float, engine: str, start: float,
           where: str, rounding: float = 0.0) -> Certificate:
    """The verdict on slacks already read (any source of costs: a matrix, or point sets whose
    costs the read pass computed): ``min_slack`` over all pairs, ``max_assigned`` over the
    assigned ones (0-d arrays or numbers), ``v`` and ``col`` (k,) for a rectangular problem's
    column conditions; ``rounding``: how far the read slacks may be from the true ones
    (:func:`check_rounding`), in the bound it states. Raises SolverError naming what failed."""
    xp = np if isinstance(v, np.ndarray) else __import__("cupy")
    k = len(col)
    # an assignment: each row one column of the m, no column twice (the duals prove nothing of another)
    in_range = k == 0 or (int(col.min()) >= 0 and int(col.max()) < m)
    # (comparisons with a number through xp's ufuncs, and no cupy.bincount, which compares `col < 0`:
    # CuPy sends such an operator through NumPy's dispatch, whose first call imports cupyx.scipy)
    taken = xp.zeros(m, dtype=np.uint8)
    if in_range and k:
        taken[col] = 1
    one_each = in_range and int(np.count_nonzero(taken if xp is np else taken.get())) == k  # host: see arrays.all_true
    free_ok = True
    if m > k and one_each:  # rectangular: free columns keep v = 0, taken ones v ≤ 0
        free_ok = all_true(xp.less_equal(v, tolerance)) and all_true(xp.less_equal(xp.abs(v[xp.equal(taken, 0)]),
                                                                                  tolerance))
    min_slack, max_assigned = (_plain(x.item() if hasattr(x, "item") else x) for x in (min_slack, max_assigned))
    ms = (time.perf_counter() - start) * 1e3
    certificate = Certificate(True, min_slack, max_assigned, tolerance, ms, where,
                              objective_within=proved_within(tolerance + rounding, k, m))
    # negated comparisons: a NaN slack (NaN duals) fails too
    if not min_slack >= -tolerance or not max_assigned <= tolerance or not free_ok or not one_each:
        what = [] if one_each else ["the rows do not take distinct columns of the matrix"]
        if not min_slack >= -tolerance:
            what.append(f"a reduced cost is {min_slack} < −{tolerance} (duals infeasible)")
        if not max_assigned <= tolerance:
            what.append(f"an assigned pair has reduced cost {max_assigned} > {tolerance} (not tight)")
        if not free_ok:
            what.append("a column dual is positive, or nonzero on a free column")
        raise SolverError(f"the {engine} engine's answer failed its optimality certificate: "
                          f"{'; '.join(what)} (a bug, please report it)")
    return certificate


def proved_within(tolerance: float, k: int, m: int) -> float:
    """How far an answer certified at ``tolerance`` on k × m work (k ≤ m) may exceed the optimum,
    without a column reduction (the module docstring): (2·max(k, m) + 1)·tolerance."""
    return (2 * max(k, m) + 1) * float(tolerance)


def largest_magnitude(values) -> int:
    """max |x| of integer ``values`` (NumPy or CuPy) as a Python int (no int64 wrap at −2⁶³)."""
    if not values.size:
        return 0
    return max(abs(int(values.min())), abs(int(values.max())))


def check_rounding(u, v, tolerance: float) -> float:
    """How far a float64 slack c − u − v read near the certificate's bounds (|c − u − v| ≲ tol) may
    be from the true one, in either order of the two subtractions: each rounds by 2⁻⁵³ of its
    result, the first's at most |v| (or |u|) + tol, the second's tol: 2⁻⁵²·(max|u| + max|v| + tol)."""
    scaled = [2.0**-52 * float(abs(x).max()) if x.size else 0.0 for x in (u, v)]  # duals near 1.8e308 add up
    return sum(scaled) + 2.0**-52 * float(tolerance)


def column_reduction_rounding(work, col_of_row, u, v, max_assigned_slack: float) -> float:
    """What the rounding of a square float64 work matrix's reduction adds to ``objective_within``:
    2⁻⁵⁰·R(σ) (2⁻⁵¹ proved; the rest covers this sum's own rounding), R(σ) bounded by the work
    duals (host) as Σ u + Σ v[σ] + k·max assigned slack + Σ column offsets[σ]. 0 without a column
    reduction (``work.col_offset`` None: :func:`proved_within` holds it) or for integers."""
    if work.col_offset is None or work.values.dtype.kind != "f":
        return 0.0
    from .sums import float_sum

    col = np.asarray(col_of_row)
    terms = 2.0**-50 * np.concatenate([np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)[col],
                                       np.asarray(work.col_offset, dtype=np.float64)[col]])  # scaled first: R may pass the range
    with np.errstate(over="ignore"):
        total = float(terms.sum())
    if not np.isfinite(total):  # partial sums past float64's range (costs near ±1e308)
        total = float_sum(terms.tolist())
    slack = 2.0**-50 * len(col) * max(float(max_assigned_slack), 0.0)
    return max(total + slack, 0.0) + len(terms) * 5e-324  # what the scaling may have flushed to zero


def _device_min_slack(cost, u, v, dual_dtype):
    kernel = _device_min_slack_kernel(dual_dtype is np.int64)
    # per row first: a reduction of the whole matrix to one value would run on one block
    return kernel(cost, u[:, None], v[None, :], axis=1).min()


def _host_min_slack(cost, u, v, dual_dtype):
    k, m = cost.shape
    step = max(1, HOST_CHUNK_ELEMENTS // max(m, 1))
    smallest = None
    for start in range(0, k, step):
        block = cost[start:start + step].astype(dual_dtype)  # always a copy: the duals go in place
        with np.errstate(over="ignore"):  # costs near 1.8e308: a slack past the range is +inf, never the least
            block -= u[start:start + step, None]
            block -= v[None, :]
        low = block.min()
        smallest = low if smallest is None else min(smallest, low)
    return np.asarray(smallest if smallest is not None else 0, dtype=dual_dtype)

