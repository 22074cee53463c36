"""scipy-compatible entry point."""

from __future__ import annotations

from .arrays import is_cupy
from .engines.auto import choose
from .cuda.probe import cuda_status
from .facade import solve
from .problem import array_module, prepare


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
        is the optimum. CuPy input gives CuPy index arrays, anything else NumPy arrays.

    Raises
    ------
    ValueError
        "expected a matrix (2-D array), got a N array", "matrix contains invalid numeric
        entries" (NaN, or the wrong-signed infinity), "cost matrix is infeasible".
    TypeError
        Non-numeric entries.

    Notes
    -----
    The engine is chosen as ``lapcli.solve(..., solver="auto")`` chooses it (docs/dispatch.md):
    scipy without a GPU and below the measured crossovers, the CUDA Hungarian kernel above them.
    Where scipy is chosen it is called directly, so the answer and its errors are scipy's own.

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
    if not is_cupy(cost_matrix):
        # where auto would run scipy anyway, call it directly: the assignment is all this function
        # returns, so the report, objective and certificate machinery would be pure overhead
        # (a 1 × 1000 problem takes scipy 9 µs)
        if not cuda_status()[0] or choose(prepare(cost_matrix, maximize=maximize))[0] == "scipy":
            from scipy.optimize import linear_sum_assignment as scipy_lsa

            return scipy_lsa(cost_matrix, maximize=maximize)
    solution = solve(cost_matrix, maximize=maximize)
    xp = array_module(cost_matrix)
    return xp.asarray(solution.row_ind), xp.asarray(solution.col_ind)
