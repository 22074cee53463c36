"""The columns of a batch straight from scipy, one problem after the other: what
``batch_linear_assignment`` runs without a GPU where the pipeline would add only its fixed cost.

Without a GPU ``auto`` gives a batch to ``scipy-batch``, which solves the same scipy calls over
the pipeline's work stack (transposes, float reduction, sentinels), on two threads from 64K
entries a stack, and a ragged list's members beside its worker process from 256 members of
64 entries on average and 150K in all (member_threads.sharing_pays). For
small stacks and lists the pipeline's preparation and bookkeeping are the time: ~35 µs a call
against 5 µs for a loop over two 16 × 16 problems, 2–13× a plain scipy loop (2-core CI machine);
and a list of small members gains less from the worker than the split costs (_list_shared).
``columns`` is that loop, on the caller's arrays (float64 ones reduced by row as the pipeline
reduces them, member_values.scipy_form: +4 µs on two 16 × 16 problems), in the pipeline's result
layout. It declines
(None) whatever the pipeline must see: other inputs, integers float64 cannot sum exactly, floats
that are not finite or near float64's overflow, stacks large enough for the threads, lists past
_list_shared's crossover, and any problem scipy refuses.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from ...arrays import is_torch
from ...float64_exact import float64_exact
from .member_answers import fill_scattered
from .member_values import FLOAT64, float64_copies, joined, scipy_form, values_end_to_end
from .member_threads import MEMBERS_SHARED_FROM, sharing_pays
from .scipy_batch import CPUS, SERIAL_BELOW, THREADS_FROM

# The element types scipy solves as they are (it converts to float64): float32 and float64, and
# integers checked by float64_exact.
LOOPED_FLOATS = "fd"
# Floats go to the loop only where every entry is finite and below this in magnitude: scipy's sums
# of a few such costs cannot overflow (near 1e308 they do, and it returns an assignment that is
# not optimal; the pipeline refuses such costs in one line). An infinity, a forbidden pair, goes to
# the pipeline too, which checks the finite costs' spread before it marks them.
FLOAT_LOOP_LIMIT = 1e290
FLOAT32_MAX = np.finfo(np.float32).max
INTP_IS_INT64 = np.dtype(np.intp) == np.int64


def columns(costs, maximize: bool):
    """(B, n) int64 columns (−1: an unassigned row) of a NumPy or CPU torch (B, n, m) stack, in its
    library, or a list of them for a list of NumPy matrices of several shapes (one array when they
    share a shape, as the pipeline stacks them); None where the pipeline takes the batch."""
    if isinstance(costs, np.ndarray):  # a subclass as its data, as scipy reads it (a mask is not a cost)
        return _stack_columns(np.asarray(costs), maximize) if costs.ndim == 3 else None
    if is_torch(costs):
        if costs.ndim != 3 or costs.device.type != "cpu" or costs.requires_grad:
            return None
        try:
            stack = costs.numpy()
        except (TypeError, RuntimeError):  # bfloat16 and other types NumPy lacks
            return None
        looped = _stack_columns(stack, maximize)
        return None if looped is None else __import__("torch").from_numpy(looped)
    if isinstance(costs, (list, tuple)) and costs:
        if all(type(c) is np.ndarray and c.ndim == 2 for c in costs) and not _list_shared(costs):
            return _list_columns(costs, maximize)
    return None


def _list_shared(matrices: list) -> bool:
    """Whether the pipeline would share a list between its two processes or threads
    (lapcli.engines.cpu.member_threads.sharing_pays), where it pays back its own work a member;
    this loop takes every other list."""
    count = len(matrices)
    return count >= MEMBERS_SHARED_FROM and sharing_pays(count, sum(m.size for m in matrices), CPUS)


def _looped_dtype(dtype: np.dtype) -> bool:
    """Types the loop solves; other byte orders go to the pipeline, which makes them native (a
    big-endian float64 is not np.float64 to the reduction below, and scipy then compared the
    magnitudes of 1e6 + U(0, 1e-7) costs, not their spread)."""
    return dtype.isnative and (dtype.kind in "iu" or dtype.char in LOOPED_FLOATS)


def _stack_columns(stack: np.ndarray, maximize: bool) -> np.ndarray | None:
    batch, n, m = stack.shape
    if not _looped_dtype(stack.dtype) or stack.size == 0:
        return None
    if CPUS > 1 and stack.size >= THREADS_FROM and n * m >= SERIAL_BELOW:  # the pipeline's threads pay
        return None
    if not (float64_exact(stack) if stack.dtype.kind != "f" else _moderate(stack)):
        return None
    if stack.dtype == np.float64:  # reduced as scipy_form reduces a member: scipy compares the spread
        axis = 2 if n <= m else 1
        stack = stack - (stack.max(axis=axis, keepdims=True) if maximize else stack.min(axis=axis, keepdims=True))
    try:
        if n <= m:  # every row assigned, in order: scipy's columns are the row's
            return np.array([scipy_lsa(matrix, maximize)[1] for matrix in stack], dtype=np.int64).reshape(batch, n)
        col_ind = np.full((batch, n), -1, dtype=np.int64)
        for b in range(batch):
            rows, cols = scipy_lsa(stack[b], maximize)
            col_ind[b, rows] = cols
        return col_ind
    except ValueError:  # NaN, a wrong-signed infinity, an infeasible problem
        return None


def _list_columns(matrices, maximize: bool):
    dtypes = {c.dtype for c in matrices}
    if not all(_looped_dtype(dtype) for dtype in dtypes):
        return None
    one_kind = len({dtype.kind for dtype in dtypes}) == 1  # no per-member sorting of floats from integers
    kind = next(iter(dtypes)).kind
    floats = (matrices if kind == "f" else []) if one_kind else [c for c in matrices if c.dtype.kind == "f"]
    if floats and not _moderate_floats(floats, dtypes if one_kind else {c.dtype for c in floats}):
        return None
    # float64 members reduced as the pipeline's members are (scipy_form): scipy compares their spread
    solved_as = [scipy_form(c, maximize) for c in matrices] if floats and FLOAT64 in dtypes else matrices
    integers = ([] if kind == "f" else list(range(len(matrices)))) if one_kind else \
        [b for b, c in enumerate(matrices) if c.dtype.kind in "iu"]
    if integers:  # the member loop's float64 forms: converted and checked exact in one pass, or None
        copies = float64_copies([matrices[b] for b in integers])
        if copies is None:
            return None
        solved_as = list(solved_as)
        for b, values in zip(integers, copies):
            solved_as[b] = values
    # scipy's columns are the answer where every row is assigned (rows <= cols, in order); the
    # rest (tall and empty members) are noted as the loop meets them and scattered at once after
    looped, rest, lengths, answers = [], [], [], []
    try:
        for matrix in solved_as:
            rows, cols = matrix.shape
            if 0 < rows <= cols:
                looped.append(scipy_lsa(matrix, maximize)[1])
                continue
            rest.append(len(looped))
            lengths.append(rows)
            answers.append(scipy_lsa(matrix, maximize) if rows and cols else None)
            looped.append(None)
    except ValueError:
        return None
    fill_scattered(looped, rest, lengths, answers)
    if not INTP_IS_INT64:  # scipy's columns are intp
        looped = [c.astype(np.int64, copy=False) for c in looped]
    if all(c.shape == matrices[0].shape for c in matrices):
        return np.stack(looped)
    return looped


def _moderate_floats(floats: list, dtypes: set) -> bool:
    """_moderate over the float members' values, scanned once: their bytes joined where they share
    one dtype (np.concatenate cost ~0.3 µs a member, a quarter of a small member's solve; the
    join ~0.05 µs), else concatenated as float64."""
    if len(dtypes) == 1:
        return _moderate(joined(floats, next(iter(dtypes))))
    return _moderate(values_end_to_end(floats))


def _moderate(values: np.ndarray) -> bool:
    """Every float finite and, for float64, below FLOAT_LOOP_LIMIT in magnitude (NaN compares
    False; float32 values, finite, are far below it)."""
    limit = FLOAT_LOOP_LIMIT if values.dtype.itemsize == 8 else FLOAT32_MAX
    # two reductions, no temporary |values| (NaN fails both comparisons)
    return not values.size or bool(values.max() <= limit and values.min() >= -limit)
