"""Which engine solves a problem: ``choose(problem, solver)``, for a matrix or a stack, the solver
the caller named or ``auto``'s pick from the measured crossovers, with the reason it reports.

Without a GPU, scipy: it solves k × m natively and beat the NumPy twin on every input measured on
the 2-core CI machine (1.4–27× square, up to 10^5× on k × m; docs/dispatch.md); lapx instead, where
it is installed, for squares in its measured lead (``lapx_is_faster``), and the exact NumPy engine
for integers too wide for float64 (``choose_for_matrix``). The twin runs otherwise only when named. With a GPU, scipy below the measured crossover and a GPU engine above it; a
strongly rectangular k × m problem (the kernel would pad it to m × m) goes to scipy, or to
``cuda-sap`` on the rectangle as it is where its long side is above 2048 and its short one at
least 256 (below).
The crossovers depend on the cost range, estimated from a sample of rows (floats count as
high-range: their step-6 counts are those of the widest integer ranges). Floats up to the one-block
search's 2048 columns go to ``cuda-sap`` (the auction, then shortest paths): as fast as ``cuda``
on U[0, 1) and 2.9–3.6× faster on squared distances, where the classical phases still need
thousands of dual updates (H100, docs/benchmarks.md); so do integers up to n = 1024 whose range
is wide (R ≥ 30, estimated ≥ 25) and up to 2048 whose range is wider (R ≥ 100, estimated ≥ 60:
integer squared distances there 3.1× faster); other integers go to ``cuda``. Above 2048 columns
``cuda-sap`` starts from the ε-scaling auction and searches over a thread-block cluster (Hopper):
minimised floats and minimised integers of estimated R ≥ 60 up to 4096, ≥ 9 up to 8192 and ≥ 2.5
above go to it (1.3–4.9× ``cuda`` from 4096 to 16384 on every such cell measured), the others to ``cuda``: integers of low range, whose
many zeros the classical kernel uses best, integers too wide for the auction's float64, and
maximised costs (maximised distances make the auction's prices climb far: never measured faster).
k × m problems with the long side above 2048, at least twice the short one and the short one at
least 256 go to ``cuda-sap`` too, solved as they are (padding them to a square cost ``cuda`` 100×).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from ..cuda.probe import cluster_kernel_status, cuda_status, free_device_bytes, search_kernel_status
from ..errors import LapInputError
from . import registry


@dataclass(frozen=True)
class Crossovers:
    """Smallest square side k at which the CUDA kernel beat scipy (H100, docs/dispatch.md)."""

    cuda_low_range: int = 256  # integers in [0, R·k) with R below low_range_below
    low_range_below: float = 3.0  # n = 256: cuda 1.13–1.52× scipy at R ≤ 2, 0.73–0.92× at R = 4–16
    cuda_high_range: int = 384  # every range, and floats (H100 at 384: cuda 2.0× scipy at R = 100 and 1000, cuda-sap 1.5–1.8× on floats)
    sap_floats_up_to: int = 2048  # floats from cuda_high_range up to here: cuda-sap (its one-block search)
    sap_ints_up_to: int = 1024  # integers with R ≥ sap_ints_range from cuda_high_range up to here: cuda-sap
    sap_ints_range: float = 25.0  # R = 30 and up (the estimate of R = 30 is ~29.95); H100, n = 1024, R = 100:
    # cuda-sap 5.45 ms wall, cuda 7.32; at 384, R = 30: 2.29 against 4.06 (docs/dispatch.md)
    sap_wide_ints_up_to: int = 2048  # and from sap_ints_up_to up to here, integers with R ≥ sap_wide_ints_range:
    sap_wide_ints_range: float = 60.0  # H100, n = 2048, wall ms cuda / cuda-sap: R = 30 17.9 / 21.5,
    # R = 100 21.8 / 14.9, R = 1000 24.4 / 18.2, integer squared distances (R ≈ 490) 130 / 42
    wide_ratio: int = 4  # max(n, m) > wide_ratio · min(n, m): scipy (native k × m)
    # Without a GPU, lapx (when installed) on square matrices: 2-core CI machine, best of 5, lapx 0.11
    # against scipy 1.17: integers 1.3–1.9× scipy at n = 64, 2.0–5.1× at 128, 3.9–5.7× at 2048;
    # U[0, 1) floats 1.6× at 64, 2.4–2.8× at 128–512, 1.1× at 1024, 0.73× at 2048; below 64 scipy
    # (0.1–0.6×), and on rectangular matrices lapx's extend_cost is 0.27–1.5× (docs/dispatch.md).
    lapx_from: int = 64
    lapx_floats_up_to: int = 512
    # Above sap_floats_up_to, squares minimised: floats, and integers of R at or above
    # large_ints_range_at(n), go to cuda-sap (its ε-scaling auction, then searches over a
    # thread-block cluster). H100, host -> host ms, cuda / cuda-sap, one run each: U[0, 1) float32
    # 44 / 38 at 4096, 614 / 199 at 16384; float64 squared 2-D distances 1,065 / 136 at 4096, 5,029
    # / 160 at 8192; integer ones 595 / 63 at 4096, 2,840 / 192 at 16384; uniform integers R = 1000
    # 274 / 49 at 8192; R = 30 35.7 / 41.1 at 4096, 85.8 / 60.5 at 8192; R = 10 25.9 / 34.8 at
    # 4096, 60.3 / 49.6 at 8192; R = 3 36.9 / 78.9 at 8192, 133 / 96 at 16384; R = 1 76.5 / 138
    # at 16384. Each threshold sits below the least range measured faster (a k-column estimate of
    # R falls just short of R: R = 10 reads 9.99, so a threshold of 10 sent it to cuda). H200,
    # medians of 3 (docs/bench/large-ints-*-h200-2026-11-30.json): R = 3 / 5 / 10 / 20 at 8192
    # 35.8 / 47.5, 49.6 / 45.0, 56.0 / 40.5, 69.7 / 42.8; R = 1 / 2 / 3 / 5 at 16384 75.0 / 113,
    # 76.9 / 105, 93.0 / 92.6, 104 / 107 (the engine chosen the faster, or within 11 %: R = 5 at 8192).
    large_ints_ranges: tuple = ((4096, 60.0), (8192, 9.0))  # (up to n, R from); beyond: the last
    large_ints_range_beyond: float = 2.5
    # k × m with the long side above sap_floats_up_to, at least rectangular_ratio × the short one
    # and the short one at least cuda_low_range (below, scipy's microseconds): cuda-sap as it is
    # (no padding, no auction, every row searched from v = 0). H100, ms:
    # 2000 × 8000 integers R = 100 cuda (padded) 1,548 / cuda-sap 16.5; 1000 × 20000 scipy 434 /
    # cuda-sap 11.3 (float64 distances 498 / 15.9); 4000 × 4500 integers cuda 21.0 / cuda-sap 51.4.
    rectangular_ratio: int = 2

    def large_ints_range_at(self, k: int) -> float:
        """The R from which cuda-sap beats cuda on a square k × k integer matrix above
        sap_floats_up_to (its tail of searches grows slower with k than the classical kernel's
        dual updates)."""
        return next((r for up_to, r in self.large_ints_ranges if k <= up_to), self.large_ints_range_beyond)


CROSSOVERS = Crossovers()
SAMPLE_ROWS = 8
# `lap solve` of one matrix is one solve in a new process (one_solve): cuda-sap's first call
# (CuPy's import, its kernels' first loads: ~0.4 s) outweighs its lead on integer squares up to
# this side. H200, cold wall s, cuda-sap / cuda (the driver's copy, no CuPy): 2048 R = 100
# 1.07-1.09 / 0.41-0.45; 4096 R = 100 0.96-1.35 / 0.39-0.55 (cuda-sap 0.77-0.94 without its
# import of cupyx.scipy), R = 1000 1.06-1.15 / 0.42-0.46; integer distances at 4096 1.25-1.39 /
# 1.00-1.13. At 8192 uniform integers still favour cuda
# (R = 1000 1.05-1.25 / 0.63-0.69) but integer distances take cuda 1.7 s warm against cuda-sap's
# 0.15 (H100): the rule stops at 4096. Floats stay (cuda reads them through CuPy too).
ONE_SOLVE_INTEGERS_UP_TO = 4096
_one_solve = False


@contextmanager
def one_solve(expected: bool = True):
    """Within: this process solves one matrix (``lap solve`` of one input): weigh cuda-sap's first call."""
    global _one_solve
    previous, _one_solve = _one_solve, expected
    try:
        yield
    finally:
        _one_solve = previous


def long_rectangle(small: int, large: int) -> bool:
    """A k × m shape (short side ``small``, long side ``large``) that cuda-sap solves as it is,
    where a cluster holds its columns (Crossovers.rectangular_ratio)."""
    return (large > CROSSOVERS.sap_floats_up_to and small >= CROSSOVERS.cuda_low_range
            and large >= CROSSOVERS.rectangular_ratio * small)


def may_choose_gpu(n_rows: int, n_cols: int) -> bool:
    """Whether ``auto`` may give an n_rows × n_cols matrix to a CUDA engine, by its shape alone: the
    hint the ``lap`` entry point reads (before NumPy is imported) to start the driver early."""
    small, large = sorted((n_rows, n_cols))
    if long_rectangle(small, large):
        return True  # cuda-sap as it is, where clusters exist
    return not (large > CROSSOVERS.wide_ratio * max(small, 1) or large < CROSSOVERS.cuda_low_range)


def estimated_range(problem) -> float | None:
    """R ≈ (max − min) / k over a few rows (cheap: 8·m values), or None for floats."""
    original = problem.original
    if original.dtype.kind == "f":
        return None
    rows = original[: SAMPLE_ROWS]
    lo, hi = rows.min(), rows.max()
    return (float(hi) - float(lo)) / max(problem.size, 1)


def choose(problem, solver: str = "auto") -> tuple[str, str]:
    """(engine name, reason): the named engine, checked to fit the problem's kind (a matrix or a
    stack) and to run here, or ``auto``'s pick."""
    if solver != "auto":
        return requested(problem, solver)
    return choose_for_stack(problem) if problem.is_stack else choose_for_matrix(problem)


def requested(problem, name: str) -> tuple[str, str]:
    engine = registry.get(name)
    if not engine.capabilities.matrix:
        raise LapInputError(f"solver {name!r} matches point sets (solve_points, lap solve --points), not a matrix")
    if engine.capabilities.batch and not problem.is_stack:
        raise LapInputError(f"solver {name!r} solves stacks of problems: use solve_batch or a 3-D input")
    if problem.is_stack:
        batch_engine(name)
    engine.require()
    return name, "requested"


def batch_engine(name: str):
    """The registered engine ``name``, which must solve stacks and lists of problems (else
    LapInputError naming those that do); whether it runs here is the caller's to ask."""
    engine = registry.get(name)
    if not engine.capabilities.batch:
        batch_names = ", ".join(registry.solver_choices(batch=True)[1:])
        raise LapInputError(f"solver {name!r} solves one problem at a time; for a stack or a list use {batch_names}")
    return engine


def choose_for_stack(problem) -> tuple[str, str]:
    """A stack: the GPU batch kernel when it can run here and holds the columns, else scipy per problem."""
    available, why = cuda_status()
    if not available:
        return "scipy-batch", f"auto: {why}; scipy per problem over a thread pool"
    searchable, why_not = search_kernel_status()
    if not searchable:
        return "scipy-batch", f"auto: {why_not}; scipy per problem over a thread pool"
    _, n, m = problem.shape
    if min(n, m) and max(n, m) > registry.get("cuda-batch").capabilities.max_columns:
        return "scipy-batch", f"auto: problems of {n}×{m} exceed the GPU batch kernel's columns"
    return "cuda-batch", f"auto: {why}; the whole batch in one GPU launch"


# Point sets (lapcli.points): from here (the larger set's size) the costs are computed on the GPU
# where read; below, the cdist matrix is small and goes through the matrix rules above.
POINTS_IMPLICIT_FROM = 2049
# Minimised squares from POINTS_IMPLICIT_FROM up to this many points: their cdist matrix built on
# the GPU, solved by the matrix rules. H200, 2-D float64, certified, three metrics, four seeds, an
# 8 s limit (docs/bench/points-route-clustered-h200.txt): at 4,096 points uniform sets 0.04–0.14 s
# against 0.09–0.35 from the coordinates, clustered 0.55–7.45 s against 0.18–5.4; at 8,192 uniform
# 0.08–0.27 against 0.11–0.47, clustered 1.0–7.5 s and five of twelve past the limit against
# 0.26–1.19 and one (the dense auction's budget stops it early on clustered sets, and its searches
# get thousands of rows): from 4,097 points, the coordinates.
POINTS_DEVICE_MATRIX_UP_TO = 4_096


# 1-D rectangles go to engine ``sorted``'s band programme wherever the GPU holds its bits
# (sorted_points.band_on_device: H200, 16,384 × 24,576 points 0.067 s against the cluster
# searches' 0.204 s; 65,536 × 98,304 0.29 s, above their 55,296 columns, where only the 51 GB
# k × m matrix remains; docs/points.md), else on the host up to this much work in cells:
# k·(m − k + 1) costs read (never more than the k × m matrix holds) and each row's own steps
# (sorted_band.band_work). 10⁸ cells take 0.65 s uncertified on the 2-core development machine
# (10,000 × 20,000 points; 1.5 s with the host certificate), where 3,000 × 4,500 took 0.29 s
# certified against the cdist matrix and scipy's 0.95 s. Its bits take cells / 8 bytes (2³³ cells: 1 GB, ~55 s on one H200 host core).
BAND_UP_TO = 1 << 33


def _band_fits(problem) -> bool:
    """Whether a 1-D rectangle's band programme costs at most BAND_UP_TO cells (its rows counted)
    or runs on the GPU, which holds its bits (lapcli.engines.cpu.sorted_points.band_on_device)."""
    from .cpu.sorted_band import band_work
    from .cpu.sorted_points import band_on_device

    k, m = sorted((problem.n_rows, problem.n_cols))
    return band_work(k, m) <= BAND_UP_TO or band_on_device(k, m)


def points_matrix_on_device(problem) -> bool:
    """Whether ``auto`` solves two point sets as their cdist matrix built on the GPU: a minimised
    square of POINTS_IMPLICIT_FROM to POINTS_DEVICE_MATRIX_UP_TO points, where the point kernels
    could run (Hopper), with free device memory for twice the float64 matrix."""
    n = problem.n_rows
    if problem.maximize or n != problem.n_cols or not POINTS_IMPLICIT_FROM <= n <= POINTS_DEVICE_MATRIX_UP_TO:
        return False
    return cluster_kernel_status(0)[0] and free_device_bytes() >= 2 * 8 * n * n


def choose_points(problem, solver: str = "auto") -> tuple[str, str]:
    """(engine, reason) for two point sets: an engine with ``capabilities.points`` computes the
    costs from the coordinates; any other engine (and ``auto`` below POINTS_IMPLICIT_FROM, for the
    squares of points_matrix_on_device, or without thread-block clusters) solves the cdist matrix,
    named ``auto`` here when the matrix rules are to choose."""
    return points_route(problem, solver)[:2]


def points_route(problem, solver: str = "auto") -> tuple[str, str, bool]:
    """choose_points' (engine, reason), and whether ``auto``'s matrix is built on the GPU."""
    if solver != "auto":
        engine = registry.get(solver)
        if engine.capabilities.batch:
            raise LapInputError(f"solver {solver!r} solves stacks; two point sets are one problem")
        engine.require()  # as for a matrix, empty sets too
        how = "costs computed from the coordinates" if engine.capabilities.points else "costs as a cdist matrix"
        return solver, f"requested ({how})", False
    if problem.on_a_line:  # any size, with or without a GPU: a sort and one certificate pass
        return "sorted", "auto: 1-D sets of equal size, matched in sorted order (their costs are Monge)", False
    if problem.along_a_line and _band_fits(problem):
        return "sorted", ("auto: 1-D sets, the smaller matched in order to part of the larger (their costs are "
                          "Monge: a programme over the band of columns each point may take)"), False
    columns = max(problem.n_rows, problem.n_cols)
    if points_matrix_on_device(problem):
        return "auto", (f"auto: {columns} × {columns} points, their cdist matrix built on the GPU (up to "
                        f"{POINTS_DEVICE_MATRIX_UP_TO} points: on uniform sets faster than the coordinates)"), True
    return (*_points_elsewhere(problem, columns), False)


def _points_elsewhere(problem, columns: int) -> tuple[str, str]:
    """(engine, reason) for point sets whose matrix is not built on the GPU."""
    if columns >= POINTS_IMPLICIT_FROM:
        # a minimised square goes to the auction (no column limit), the others to the cluster searches
        from ..cuda import auction

        by_auction = auction.solves(problem.n_rows, problem.n_cols, problem.maximize)
        clusters, why = cluster_kernel_status(0 if by_auction else columns)
        if clusters:
            return "cuda-sap", (f"auto: {problem.n_rows} × {problem.n_cols} points, costs computed on the GPU "
                                "from the coordinates (no matrix)")
        return "auto", f"auto: costs as a cdist matrix (the point kernel cannot run here: {why})"
    return "auto", f"auto: costs as a cdist matrix (at most {POINTS_IMPLICIT_FROM - 1} points a side)"


def choose_ragged(batch: int, widest: int, solver: str = "auto", packable: bool = True) -> tuple[str, str]:
    """A ragged batch of ``batch`` problems whose longest side is ``widest``: the GPU batch kernel on
    them packed into one stack when it can run here and holds the columns, else scipy per problem.
    ``packable`` False: the members share no exact type to pack in (lapcli.arrays.common_dtype),
    and scipy solves each in its own."""
    if solver != "auto":
        batch_engine(solver).require()
        return solver, "requested"
    available, why = cuda_status()
    if not available:
        return "scipy-batch", f"auto: {why}; scipy per problem"
    if not packable:
        return "scipy-batch", "auto: the members share no exact type to pack on the GPU; scipy per problem"
    searchable, why_not = search_kernel_status()
    if not searchable:
        return "scipy-batch", f"auto: {why_not}; scipy per problem"
    if widest > registry.get("cuda-batch").capabilities.max_columns:
        return "scipy-batch", f"auto: problems up to {widest} wide exceed the GPU batch kernel's columns"
    return "cuda-batch", f"auto: {why}; the whole batch in one GPU launch"


def choose_for_matrix(problem) -> tuple[str, str]:
    """``auto`` for one matrix: the crossovers' pick, but never scipy where its float64 would round
    the integers (then the exact NumPy engine, int64 duals), and cuda for integers where one solve
    in a new process would pay cuda-sap's first call (ONE_SOLVE_INTEGERS_UP_TO)."""
    name, reason = fastest_for_matrix(problem)
    if (name == "cuda-sap" and _one_solve and problem.n_rows == problem.n_cols
            and problem.original.dtype.kind in "biu" and problem.size <= ONE_SOLVE_INTEGERS_UP_TO):
        return "cuda", (f"auto: one solve in a new process, integers n={problem.size} ≤ {ONE_SOLVE_INTEGERS_UP_TO}: "
                        "the CUDA kernel, without cuda-sap's first-call cost (CuPy, its kernels' first loads)")
    if name == "scipy" and not scipy_is_exact(problem):
        return "numpy", ("auto: integers too wide for scipy's float64 to be exact, even reduced "
                         "(|c|·4(k+1) ≥ 2^53): the exact NumPy engine")
    return name, reason


def scipy_is_exact(problem) -> bool:
    """scipy solves ``problem`` exactly: floats, integers narrow enough for float64, or integers
    that an exact reduction makes so (the scipy engine reduces them first)."""
    from ..float64_exact import float64_exact, reduced_for_float64  # NumPy: not at import (lapcli.cli.gpu_start)

    original = problem.original
    if original.dtype.kind not in "biu" or float64_exact(original):
        return True
    host = original if problem.xp.__name__ == "numpy" else problem.xp.asnumpy(original)
    return reduced_for_float64(host, problem.maximize) is not None


def lapx_is_faster(problem) -> bool:
    """Without a GPU: a square matrix in lapx's measured lead (above), lapx installed, and costs its
    float64 arithmetic holds exactly (lapx, like scipy, solves in float64)."""
    n, m = problem.n_rows, problem.n_cols
    if n != m or n < CROSSOVERS.lapx_from:
        return False
    if problem.original.dtype.kind == "f" and n > CROSSOVERS.lapx_floats_up_to:
        return False
    if not registry.get("lapx").available()[0]:
        return False
    from ..float64_exact import float64_exact  # NumPy: not at import (lapcli.cli.gpu_start)

    return float64_exact(problem.original)


def above_one_block(problem) -> tuple[str, str]:
    """A matrix above the one-block search's columns on a GPU that is not a long rectangle: for a
    square, cuda-sap (the ε-scaling auction,
    then searches over a thread-block cluster) for minimised floats and minimised integers of wide
    range that its float64 resolves, else cuda (Crossovers above)."""
    from ..cuda.auction import AUCTION_INTEGER_SPAN

    size = problem.size
    cuda = f"auto: n={size} ≥ {CROSSOVERS.cuda_high_range}: the CUDA kernel is faster there"
    if problem.n_rows != problem.n_cols:  # near-square: cuda-sap would search every row from v = 0
        return "cuda", f"{cuda} ({problem.n_rows}×{problem.n_cols}: no auction start for a rectangle)"
    if problem.maximize:
        return "cuda", f"{cuda} (maximised: the auction's prices climb far)"
    clusters, why = cluster_kernel_status(size)
    if not clusters:
        return "cuda", f"{cuda} (shortest paths over a cluster cannot run here: {why})"
    range_factor = estimated_range(problem)
    if range_factor is None:
        return "cuda-sap", (f"auto: floats, n={size} > {CROSSOVERS.sap_floats_up_to}: the ε-scaling auction and "
                            "shortest paths over a thread-block cluster are fastest there")
    wide = CROSSOVERS.large_ints_range_at(size)
    if range_factor >= wide and range_factor * size * size < AUCTION_INTEGER_SPAN:
        return "cuda-sap", (f"auto: n={size} > {CROSSOVERS.sap_floats_up_to} with R≈{range_factor:.3g} ≥ "
                            f"{wide:g}: the ε-scaling auction and shortest paths over a "
                            "thread-block cluster are fastest there")
    return "cuda", cuda


def fastest_for_matrix(problem) -> tuple[str, str]:
    """The measured crossovers' pick for one matrix (docs/dispatch.md)."""
    available, why = cuda_status()
    if not available:
        if lapx_is_faster(problem):
            return "lapx", (f"auto: {why}; lapx (installed): square n={problem.size} ≥ {CROSSOVERS.lapx_from}, "
                            "where it beat scipy on the CPU")
        return "scipy", f"auto: {why}; scipy (native k×m; faster than the NumPy twin everywhere measured)"
    small, large = sorted((problem.n_rows, problem.n_cols))
    if long_rectangle(small, large) and cluster_kernel_status(large)[0]:
        return "cuda-sap", (f"auto: {problem.n_rows}×{problem.n_cols}: shortest paths on the rectangle as it is "
                            "(no padding) are fastest there")
    if large > CROSSOVERS.wide_ratio * max(small, 1):
        return "scipy", f"auto: {problem.n_rows}×{problem.n_cols} is wide; scipy solves it natively (cuda pads to {large}²)"
    size = problem.size
    if size < CROSSOVERS.cuda_low_range:
        return "scipy", f"auto: n={size} < {CROSSOVERS.cuda_low_range}: scipy is faster there on the GPU machine"
    if size >= CROSSOVERS.cuda_high_range:
        if size > CROSSOVERS.sap_floats_up_to:
            return above_one_block(problem)
        if problem.original.dtype.kind == "f":
            if search_kernel_status()[0]:
                return "cuda-sap", (f"auto: floats, {CROSSOVERS.cuda_high_range} ≤ n={size} ≤ "
                                    f"{CROSSOVERS.sap_floats_up_to}: the auction and shortest paths are fastest there")
        elif size <= CROSSOVERS.sap_wide_ints_up_to and search_kernel_status()[0]:
            range_factor = estimated_range(problem)
            up_to, wide = ((CROSSOVERS.sap_ints_up_to, CROSSOVERS.sap_ints_range) if size <= CROSSOVERS.sap_ints_up_to
                           else (CROSSOVERS.sap_wide_ints_up_to, CROSSOVERS.sap_wide_ints_range))
            if range_factor >= wide:
                return "cuda-sap", (f"auto: n={size} ≤ {up_to} with R≈{range_factor:.3g} ≥ {wide:g}: "
                                    "the auction and shortest paths are fastest there")
        return "cuda", f"auto: n={size} ≥ {CROSSOVERS.cuda_high_range}: the CUDA kernel is faster there"
    range_factor = estimated_range(problem)  # between the two crossovers: low ranges only
    if range_factor is not None and range_factor < CROSSOVERS.low_range_below:
        return "cuda", f"auto: n={size} ≥ {CROSSOVERS.cuda_low_range} with R≈{range_factor:.3g}: the CUDA kernel is faster there"
    kind = "floats" if range_factor is None else f"R≈{range_factor:.3g}"
    return "scipy", f"auto: n={size} < {CROSSOVERS.cuda_high_range} ({kind}): scipy is faster there on the GPU machine"
