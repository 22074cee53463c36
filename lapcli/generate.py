"""Reproducible random cost matrices, in the papers' conventions.

``uniform`` with range factor R draws integers uniform in [0, max(1, round(R·n))) as LAP19 and
Kawtikwar et al. do (R from 0.001 to 1000). Rows are drawn in fixed chunks from one
``numpy.random.Generator`` seeded with ``seed``, so the same seed gives the same matrix whether or
not a progress bar is shown. A stack (:func:`generate_stack`) seeds problem b with child b of
``SeedSequence(seed)``, so problem b does not depend on the batch size.

:func:`generate_blocks` and :func:`generate_stack_blocks` yield the same values as row blocks, one
chunk at a time, for writers that stream a matrix larger than memory (``lap generate``);
:func:`generate` and :func:`generate_stack` assemble those blocks.
"""

from __future__ import annotations

import math
import os
import secrets
from collections.abc import Callable, Iterable, Iterator

import numpy as np

from .errors import LapInputError

KINDS = ("uniform", "float", "geometric", "geometric-int", "sanity")
FLOAT_KINDS = ("float", "geometric", "sanity")  # values in [0, 2]: an integer dtype would truncate them
RANGELESS_KINDS = (*FLOAT_KINDS, "geometric-int")  # kinds whose values do not depend on R
GENERATED_DTYPES = ("int32", "int64", "float32", "float64")
POINT_KINDS = ("uniform", "clustered")  # lap generate --points: U[0, 1)^d, or a Gaussian mixture
CLUSTERS, CLUSTER_SPREAD = 16, 0.03  # clustered: centres U[0, 1)^d, each point N(centre, spread²)
CLUSTER_CENTRES_SEED = 0  # every seed draws from the same mixture: two seeds are two samples of it
CHUNK_ROWS = 1024
GEOMETRIC_INT_SCALE = 500_000  # geometric-int: squared distances in the unit square (≤ 2) to [0, 10⁶]


def new_seed() -> int:
    return secrets.randbits(32)


def uniform_high(n: int, range_factor: float) -> int:
    """Exclusive upper bound of the uniform integers: max(1, round(R·n))."""
    return max(1, round(range_factor * n))


def kind_dtype(kind: str) -> str:
    """The dtype a kind is made in when none is asked for (uniform: int32 unless its values need int64)."""
    return "float64" if kind in FLOAT_KINDS else "int32"


def default_dtype(kind: str, n: int, range_factor: float) -> str:
    if kind != "uniform":
        return kind_dtype(kind)
    return "int32" if uniform_high(n, range_factor) <= 2**31 else "int64"


OVERHEAD_BYTES = 2**20  # Python objects, an NPY header, the HDF5 library's buffers: ~50 KB measured


def physical_memory() -> int | None:
    """This machine's memory in bytes; None where the system does not say."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def past_memory(need: int, memory: int | None) -> str | None:
    """"more than this machine's M GiB of memory" where ``need`` bytes pass ``memory`` (a
    :func:`physical_memory`), else None (it fits, or the system does not say): the words of every
    refusal of work too large to hold."""
    if memory is None or need <= memory:
        return None
    return f"more than this machine's {memory / 2**30:.3g} GiB of memory"


def block_bytes(n: int, m: int, kind: str, dtype) -> int:
    """The memory that making and writing one block of an n×m matrix takes at its peak. Measured
    with tracemalloc (a 1024 × 4096 block, NPY and HDF5 alike): the values are drawn in int64 or
    float64 (8 bytes an entry); the geometric and sanity kinds hold a second float64 array meanwhile
    (dy; the offsets' sum); the cast to ``dtype`` is a copy unless it is the draw's dtype; and the
    writer still holds the block before. Uniform int32 takes 16 bytes an entry, geometric float64
    24. The geometric kinds keep both point sets (16 bytes a row and a column), sanity its offsets."""
    dtype = np.dtype(dtype)
    drawn = np.dtype(np.int64 if kind == "uniform" else np.float64)
    cast = 0 if dtype == drawn else dtype.itemsize
    temporary = 16 if kind in ("geometric", "geometric-int", "sanity") else 8
    fixed = {"geometric": 16, "geometric-int": 16, "sanity": 8}.get(kind, 0) * (n + m)
    return min(n, CHUNK_ROWS) * m * (max(temporary, 8 + cast) + dtype.itemsize) + fixed + OVERHEAD_BYTES


def check_block_fits(n: int, m: int, kind: str, dtype, memory: int | None = None) -> None:
    """Refuse (bad input, before any work) a matrix whose one block of rows, the unit that is
    generated and written at a time, cannot be made in this machine's memory (``memory`` bytes;
    default: :func:`physical_memory`), rather than be killed by the system on the way."""
    need = block_bytes(n, m, kind, dtype)
    past = past_memory(need, physical_memory() if memory is None else memory)
    if past:
        raise LapInputError(f"a {n}×{m} {kind} matrix ({n * m * np.dtype(dtype).itemsize / 2**30:.3g} GiB "
                            f"of {dtype}) is generated {min(n, CHUNK_ROWS)} rows at a time: one block needs "
                            f"{need / 2**30:.3g} GiB, {past}")


def ragged_bytes(batch: int, n: int, m: int, kind: str, dtype) -> int:
    """The memory a ragged batch takes as ``lap generate --ragged`` makes and writes it, from the
    expected number of entries (shapes uniform in 1..n × 1..m: (n+1)(m+1)/4 a problem; the sanity
    kind's squares (n+1)(2n+1)/6). Every matrix is held, then the file is made whole in memory
    before it is written: tracemalloc measured 2.1–2.4 times the matrices' bytes (NPZ or HDF5), and
    400–900 bytes a problem (its array, its shape, the archive's headers); one problem is made at
    a time, as one matrix is."""
    entries = (n + 1) * (2 * n + 1) / 6 if kind == "sanity" else (n + 1) * (m + 1) / 4
    held = batch * entries * np.dtype(dtype).itemsize
    return int(2.5 * held) + 1024 * batch + block_bytes(n, m, kind, dtype)


def check_ragged_fits(batch: int, n: int, m: int, kind: str, dtype, memory: int | None = None) -> None:
    """Refuse (bad input, before any work) a ragged batch that :func:`ragged_bytes` says will not
    fit this machine's memory (``memory`` bytes; default: :func:`physical_memory`)."""
    need = ragged_bytes(batch, n, m, kind, dtype)
    past = past_memory(need, physical_memory() if memory is None else memory)
    if past:
        raise LapInputError(f"a ragged batch of {batch} problems up to {n}×{m} ({dtype}) is held whole to be "
                            f"written: about {need / 2**30:.3g} GiB, {past}")


def check_options(n: int, m: int, range_factor: float, kind: str, dtype: str | None, memory: bool = True) -> str:
    """Refuse impossible combinations before any work; return the dtype to generate. ``memory``:
    whether a block must fit this machine's memory (a bench cell too large to hold is skipped)."""
    if kind not in KINDS:
        raise LapInputError(f"unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    if n < 1 or m < 1:
        raise LapInputError("n and m must be at least 1")
    if not math.isfinite(range_factor) or range_factor <= 0:
        raise LapInputError(f"the range factor must be a finite number > 0, not {range_factor}")
    if kind == "sanity" and m != n:
        raise LapInputError("the sanity kind needs a square matrix (its optimum is the identity)")
    if kind in FLOAT_KINDS and dtype is not None and np.dtype(dtype).kind in "biu":
        raise LapInputError(f"the {kind} kind makes fractional values; {dtype} would truncate them "
                         "(choose float32 or float64)")
    dtype = dtype or default_dtype(kind, n, range_factor)
    if memory:
        check_block_fits(n, m, kind, dtype)
    high = uniform_high(n, range_factor)
    if kind == "uniform" and np.dtype(dtype).kind == "i" and high - 1 > np.iinfo(dtype).max:
        raise LapInputError(f"values up to {high - 1} do not fit {dtype}")
    if kind == "uniform" and np.dtype(dtype).kind == "f" and high - 1 > 2 ** (np.finfo(dtype).nmant + 1):
        raise LapInputError(f"integers up to {high - 1} are not exact in {dtype} (past 2^{np.finfo(dtype).nmant + 1}); "
                            "use an integer dtype or float64")
    return dtype


def generate(
    n: int,
    m: int | None = None,
    *,
    range_factor: float = 1.0,
    seed: int | np.random.SeedSequence = 0,
    kind: str = "uniform",
    dtype: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """An n×m cost matrix of the given kind; ``progress(rows_done)`` is called per chunk."""
    m = n if m is None else m
    dtype = check_options(n, m, range_factor, kind, dtype)
    blocks = generate_blocks(n, m, range_factor=range_factor, seed=seed, kind=kind, dtype=dtype, progress=progress)
    return assemble((n, m), dtype, blocks)


def generate_blocks(
    n: int,
    m: int | None = None,
    *,
    range_factor: float = 1.0,
    seed: int | np.random.SeedSequence = 0,
    kind: str = "uniform",
    dtype: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[np.ndarray]:
    """The rows of :func:`generate`'s matrix as consecutive C-contiguous blocks of ``CHUNK_ROWS``
    rows (the last one shorter), already in the final dtype, so that a writer can stream a matrix
    far larger than memory. The options are checked now, not at the first block;
    ``progress(rows_done)`` is called once a block has been consumed."""
    m = n if m is None else m
    dtype = check_options(n, m, range_factor, kind, dtype)
    return _blocks(n, m, range_factor, np.random.default_rng(seed), kind, np.dtype(dtype), progress)


def _blocks(n, m, range_factor, rng, kind, dtype, progress) -> Iterator[np.ndarray]:
    # The draws, their order and their shapes are the seed's contract: changing them changes every
    # matrix made so far (tests/test_generate_stream.py pins some). Only 8- and 16-bit bounded
    # integers are buffered per call; these int64 draws come out the same in chunks of any size.
    if kind in ("geometric", "geometric-int"):  # the same points: the integer kind is the float one scaled
        rows_points, cols_points = rng.random((n, 2)), rng.random((m, 2))
    elif kind == "sanity":
        row_offsets, col_offsets = rng.random(n), rng.random(m)
    for start in range(0, n, CHUNK_ROWS):
        stop = min(n, start + CHUNK_ROWS)
        if kind == "uniform":
            block = rng.integers(0, uniform_high(n, range_factor), size=(stop - start, m), dtype=np.int64)
        elif kind == "float":
            block = rng.random((stop - start, m))
        elif kind in ("geometric", "geometric-int"):  # squared Euclidean distances in the unit square
            # dx² + dy², in place: the same bits as summing the squared differences, ~2.6× faster
            # than one (rows, m, 2) difference array (its 512 MB a block at m = 32,768)
            block = np.subtract.outer(rows_points[start:stop, 0], cols_points[:, 0])
            block *= block
            dy = np.subtract.outer(rows_points[start:stop, 1], cols_points[:, 1])
            dy *= dy
            block += dy
            del dy
            if kind == "geometric-int":
                block *= GEOMETRIC_INT_SCALE
                np.rint(block, out=block)
        else:  # sanity: 0.1·(J − I) + a⊗1 + 1⊗b, the identity is the unique optimum
            block = 0.1 * (1.0 - (np.arange(start, stop)[:, None] == np.arange(m)[None, :]))
            block += row_offsets[start:stop, None] + col_offsets[None, :]
        block = np.ascontiguousarray(block, dtype=dtype)  # the cast ``out[start:stop] = block`` made
        if kind == "float":
            below_one(block)
        yield block
        del block  # not held here while the next one is drawn
        if progress is not None:
            progress(stop)


def assemble(shape: tuple[int, ...], dtype, blocks: Iterable[np.ndarray]) -> np.ndarray:
    """The array of ``shape`` whose rows (along the last axis, in C order) are the rows of
    ``blocks``, one after the other: what the block generators stream, in memory."""
    out = np.empty(shape, dtype=dtype)
    rows = out.reshape(-1, shape[-1])  # a view: ``out`` is fresh and C-contiguous
    start = 0
    for block in blocks:
        block = block.reshape(-1, shape[-1])
        rows[start:start + len(block)] = block
        start += len(block)
    if start != len(rows):
        raise ValueError(f"the blocks hold {start} rows; the array has {len(rows)}")
    return out


def problem_seed(seed: int, index: int) -> np.random.SeedSequence:
    """The seed of problem ``index`` of a stack: child ``index`` of ``SeedSequence(seed)`` (what
    ``SeedSequence(seed).spawn`` hands out), so that problem b is the same whatever the batch size."""
    return np.random.SeedSequence(seed, spawn_key=(index,))


def generate_stack(
    batch: int,
    n: int,
    m: int | None = None,
    *,
    range_factor: float = 1.0,
    seed: int = 0,
    kind: str = "uniform",
    dtype: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """A (batch, n, m) stack of independent problems of the given kind, as :func:`generate` makes
    them (same kinds, ranges and dtypes). Problem b is drawn from its own generator seeded with
    :func:`problem_seed` (seed, b): the first B' problems of a stack of B > B' are the stack of B'.
    ``progress(problems_done)`` is called per problem."""
    m = n if m is None else m
    blocks = generate_stack_blocks(batch, n, m, range_factor=range_factor, seed=seed, kind=kind, dtype=dtype,
                                   progress=progress)
    return assemble((batch, n, m), check_options(n, m, range_factor, kind, dtype), blocks)


def generate_stack_blocks(
    batch: int,
    n: int,
    m: int | None = None,
    *,
    range_factor: float = 1.0,
    seed: int = 0,
    kind: str = "uniform",
    dtype: str | None = None,
    progress: Callable[[int], None] | None = None,
) -> Iterator[np.ndarray]:
    """:func:`generate_stack`'s stack as (rows, m) blocks: problem 0's :func:`generate_blocks`,
    then problem 1's, and so on, i.e. the rows of the (batch·n, m) view of the stack in order.
    Row blocks, not whole problems, so that a stack of large problems streams in one chunk of
    memory too. The options are checked now; ``progress(problems_done)`` is called once a
    problem's last block has been consumed."""
    m = n if m is None else m
    if batch < 1:
        raise LapInputError("the batch size must be at least 1")
    dtype = check_options(n, m, range_factor, kind, dtype)
    return _stack_blocks(batch, n, m, dict(range_factor=range_factor, kind=kind, dtype=dtype), seed, progress)


def _stack_blocks(batch, n, m, options, seed, progress) -> Iterator[np.ndarray]:
    for b in range(batch):
        yield from generate_blocks(n, m, seed=problem_seed(seed, b), **options)
        if progress is not None:
            progress(b + 1)


def generate_ragged(batch: int, n: int, m: int | None = None, *, range_factor: float = 1.0, seed: int = 0,
                    kind: str = "uniform", dtype: str | None = None) -> list[np.ndarray]:
    """A ragged batch: ``batch`` problems of shapes drawn uniformly from 1..n × 1..m (square for the
    sanity kind), problem b drawn as :func:`generate` makes an n_b × m_b matrix from
    :func:`problem_seed` (seed, b); the shapes from one more child of the seed. Values as for an
    n × m matrix of the same options (R·n_b for problem b), in one dtype for all."""
    m = n if m is None else m
    dtype = check_options(n, m, range_factor, kind, dtype)
    check_ragged_fits(batch, n, m, kind, dtype)
    shapes = np.random.default_rng(problem_seed(seed, batch)).integers(1, [n + 1, m + 1], size=(batch, 2))
    if kind == "sanity":
        shapes[:, 1] = shapes[:, 0]
    return [generate(int(rows), int(cols), range_factor=range_factor, seed=problem_seed(seed, b), kind=kind, dtype=dtype)
            for b, (rows, cols) in enumerate(shapes)]


def below_one(values: np.ndarray) -> np.ndarray:
    """U[0, 1) draws kept below 1 in place: float64 draws above 1 − 2^-25 round to 1.0 in float32
    (2 of an 8192² matrix, seed 0); those become float32's largest value below 1. The other values,
    and float64 ones, are the same bits as before."""
    if values.dtype == np.float32:
        np.minimum(values, np.nextafter(np.float32(1), np.float32(0)), out=values)
    return values


def generate_points(n: int, d: int = 2, *, kind: str = "uniform", seed: int = 0, dtype: str = "float64") -> np.ndarray:
    """An (n, d) point set, reproducible from ``seed``: ``uniform`` in [0, 1)^d, or ``clustered``,
    a mixture of CLUSTERS Gaussians (standard deviation CLUSTER_SPREAD, equal weights) as tracked
    particles or image features bunch. The mixture's centres are the same for every seed (drawn
    from CLUSTER_CENTRES_SEED), so two seeds give two samples of one scene, as two frames do."""
    if kind not in POINT_KINDS:
        raise LapInputError(f"unknown point kind {kind!r}; choose one of {', '.join(POINT_KINDS)}")
    if dtype not in ("float32", "float64"):
        raise LapInputError(f"points are float32 or float64, not {dtype}")
    from .points import MAX_DIM

    if n < 1 or not 1 <= d <= MAX_DIM:
        raise LapInputError(f"n must be at least 1 and d from 1 to {MAX_DIM} (what lapcli solves), got {n} and {d}")
    # at the peak, bytes a point: uniform its float64 draw and the cast; clustered its label, the centres
    # it takes, the noise and their sum, and the cast
    need = n * (d * (8 + 4) if kind == "uniform" else 8 + d * (3 * 8 + 4))
    past = past_memory(need, physical_memory())
    if past:
        raise LapInputError(f"{n:,} points of {d} coordinates take about {need / 2**30:.3g} GiB to make, {past}")
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return below_one(rng.random((n, d)).astype(dtype, copy=False))
    centres = np.random.default_rng([CLUSTER_CENTRES_SEED, d]).random((CLUSTERS, d))
    members = rng.integers(0, CLUSTERS, size=n)
    return (centres[members] + rng.normal(0.0, CLUSTER_SPREAD, size=(n, d))).astype(dtype, copy=False)
