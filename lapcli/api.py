"""The drop-ins: ``linear_sum_assignment`` (scipy's) and ``batch_linear_assignment``
(torch-linear-assignment's), both through the one pipeline (lapcli.pipeline)."""

from __future__ import annotations

import numpy as np

from .arrays import split_flat, tensor_values
from .cuda.probe import cuda_status
from .engines.auto import choose, choose_ragged
from .errors import LapInputError
from .input_device import on_the_inputs_gpu
from .options import check_maximize
from .pipeline import solve_batch, solve_problem
from .problem import array_module, prepare


@on_the_inputs_gpu("cost_matrix")
def linear_sum_assignment(cost_matrix, maximize=False):
    """Solve the linear sum assignment problem; a drop-in for scipy's function.

    Parameters
    ----------
    cost_matrix : array_like or cupy.ndarray
        The cost matrix of the bipartite graph, shape (n, m). ``+inf`` entries are forbidden
        (``-inf`` when ``maximize``).
    maximize : bool, optional
        Calculates a maximum weight matching if true.

    Returns
    -------
    row_ind, col_ind : arrays
        Row indices (sorted) and their assigned columns; ``cost_matrix[row_ind, col_ind].sum()``
        is the optimum. CuPy input and CUDA tensors give CuPy index arrays, anything else NumPy
        arrays.

    Raises
    ------
    ValueError
        "expected a matrix (2-D array), got a N array", "matrix contains invalid numeric
        entries" (NaN, or the wrong-signed infinity), "cost matrix is infeasible"; a sparse
        matrix or tensor, named (scipy's words are NumPy's "setting an array element with a
        sequence").
    TypeError
        Non-numeric entries.

    Notes
    -----
    Without a GPU this is scipy's own call (lapx and the ``numpy`` engine, which ``auto`` may
    pick there, are not run). With one, the engine is chosen as ``lapcli.solve(..., solver="auto")``
    chooses it (docs/dispatch.md): scipy below the measured crossovers, the CUDA kernels above them.
    Where scipy is chosen it is called directly, so the answer and its errors are scipy's own (a
    CPU torch tensor is read as its values first, as ``lapcli.solve`` reads it).

    Examples
    --------
    >>> import numpy as np
    >>> from lapcli import linear_sum_assignment
    >>> cost = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    >>> row_ind, col_ind = linear_sum_assignment(cost)
    >>> col_ind
    array([1, 0, 2])
    >>> int(cost[row_ind, col_ind].sum())
    5
    """
    cost_matrix = tensor_values(cost_matrix)  # read as solve reads it, with or without a GPU
    xp = array_module(cost_matrix)
    if xp is np and (not cuda_status()[0] or not _numbers(cost_matrix)):
        # no GPU: scipy, called directly, as the assignment is all this function returns
        # (the report, objective and certificate would be pure overhead: a 1 × 1000 problem takes
        # scipy 9 µs). Costs NumPy holds as objects or text (ints past 2^64, Decimal, '1', None):
        # scipy converts them, or refuses them in its own words, as the drop-in must
        return _scipy_lsa(cost_matrix, maximize)
    problem = prepare(cost_matrix, maximize=maximize, check=False)  # once: O(1), no pass over the costs
    if xp is np and choose(problem)[0] == "scipy":
        return _scipy_lsa(problem.original, maximize)
    try:
        solution = solve_problem(problem, certify=False)  # the pair is all it returns
    except LapInputError:
        if xp is not np:
            raise
        # what lapcli's routes refuse but scipy takes (integers too wide for exact int64 duals, a row
        # spread past float64's range): scipy's answer, as without a GPU; bad entries in its words
        return _scipy_lsa(problem.original, maximize)
    return xp.asarray(solution.row_ind), xp.asarray(solution.col_ind)


def _numbers(cost_matrix) -> bool:
    """Whether NumPy holds ``cost_matrix`` as numbers lapcli's engines take (bool, integers, floats
    up to 64 bits); a ragged list is not."""
    try:
        dtype = cost_matrix.dtype if isinstance(cost_matrix, np.ndarray) else np.asarray(cost_matrix).dtype
    except (ValueError, TypeError):
        return False
    return dtype.kind in "biuf" and dtype.itemsize <= 8


def _scipy_lsa(cost_matrix, maximize: bool):
    from scipy.optimize import linear_sum_assignment

    return linear_sum_assignment(cost_matrix, maximize=maximize)


@on_the_inputs_gpu("cost")
def batch_linear_assignment(cost, maximize: bool = False, sizes=None):
    """The column of each row for every problem of a (B, n, m) stack, −1 for an unassigned row:
    torch-linear-assignment's function (its argument ``cost`` too), on NumPy, CuPy or torch input
    (result of the same kind). ``sizes`` = (rows, cols), B integers each: problem b is
    ``cost[b, :rows[b], :cols[b]]``, the rest of the stack is not read. A list of matrices of any
    shapes gives a list of results (one (B, n) result where they share a shape, as their stack
    would). ``maximize``: the largest total of each problem instead of the least.

    Without a GPU ``auto`` runs scipy, and as in ``linear_sum_assignment`` the columns are all
    this returns: they are not certified (``solve_batch`` certifies), and a batch the pipeline's
    threads or worker process would not speed up is solved by a scipy loop on the caller's arrays
    (lapcli.engines.cpu.scipy_loop; a list of members of a few entries takes up to ~1.8× a bare
    loop's time there, which returns scipy's pairs, not each row's column: docs/benchmarks.md).
    Integers too wide for exact int64 duals even after exact reductions (spread · 4(n + 1) ≥ 2^62
    left) are refused as by ``solve_batch`` (TooWideError, a ValueError), not rounded: convert them
    to float64 to solve them as floats."""
    maximize = check_maximize(maximize)  # one sense for all, on every route (a list is refused)
    if sizes is None and not cuda_status()[0]:
        from .engines.cpu import scipy_loop  # here: scipy.optimize is not imported with lapcli

        looped = scipy_loop.columns(cost, maximize)
        if looped is not None:
            return looped
        return solve_batch(cost, maximize=maximize, objectives=False, certify=False).col_ind
    if not maximize:
        found = _lean_columns(cost, sizes)
        if found is not None:
            return found
    return solve_batch(cost, maximize=maximize, sizes=sizes, objectives=False, certify=False).col_ind


def _lean_columns(costs, sizes):
    """The columns of a torch CUDA stack (with or without sizes), or of a list of torch CUDA
    matrices, from the batch engine's lean launch (lapcli.engines.cuda.batch_torch); None where it
    does not apply (the generic path then solves them)."""
    from .arrays import is_torch

    listed = isinstance(costs, (list, tuple))
    if listed and not (costs and is_torch(costs[0]) and costs[0].is_cuda):
        return None
    if not listed and not (is_torch(costs) and costs.is_cuda and costs.dim() == 3):
        return None
    if choose_ragged(1, 1)[0] != "cuda-batch":
        return None
    from .engines.cuda import batch_torch

    if listed:
        return batch_torch.list_columns(costs) if sizes is None else None
    if sizes is None:  # a uniform stack: every problem whole (H100, B = 208, 300 × 100: 0.21 against 0.35 ms)
        batch, n, m = costs.shape
        if max(n, m) > batch_torch.LEAN_STACK_COLUMNS:
            return None  # measured up to 600 columns; wider stacks keep the stack kernel
        sizes = (np.full(batch, n), np.full(batch, m))
    return batch_torch.sized_columns(costs, sizes)


@on_the_inputs_gpu("cost")
def match(cost, sizes, maximize: bool = False, *, solver: str = "auto"):
    """DETR's Hungarian matcher in one call: ``cost`` is the (B, Q, Σk) block of every query
    against every target of the batch (``C.view(B, Q, -1)``), ``sizes`` the k_i targets of each
    image; image i solves ``cost[i, :, s_i : s_i + k_i]`` (s_i = k_0 + … + k_{i−1}), all images in
    one launch on the GPU.

    ``maximize``: the largest total instead of the least (DETR's costs are minimised); ``solver``:
    ``"auto"`` or a batch engine of ``lap info`` (``cuda-batch``, ``scipy-batch``).

    Returns what DETR's matcher returns: per image a pair (query indices, target indices) of int64
    arrays sorted by query, on the input's library and device (torch tensors for torch input). As
    DETR's loop, the pairs are all it returns: on the CPU they are not certified (the GPU's launch
    proves each image's pairs as it solves them; ``solve_batch(..., sizes=...)`` certifies)."""
    from . import ragged
    from .arrays import is_torch
    from .pipeline import solve_members_raw

    maximize = check_maximize(maximize)  # one sense for every image (a list is refused, not read as True)

    if is_torch(cost) and not maximize and solver in ("auto", "cuda-batch") and cost.is_cuda:
        from .engines.cuda.batch_torch import match_block  # the training step's call, lean

        found = match_block(cost, sizes) if choose_ragged(1, 1, solver)[0] == "cuda-batch" else None
        if found is not None:
            return found
    members = ragged.from_block(cost, sizes)
    found = solve_members_raw(members, solver=solver, maximize=maximize, objectives=False, pairs=True,
                              certify=False).pairs
    both = members.origin.to_caller(found)  # (2, Σ): one hand-over to the caller's library
    counts = np.minimum(members.rows, members.cols)  # pairs per image
    return list(zip(split_flat(both[0], counts), split_flat(both[1], counts)))
