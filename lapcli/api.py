"""scipy-compatible entry point."""

from __future__ import annotations

from .problem import array_module
from .facade import solve


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
    The solver is chosen as ``lapcli.solve(..., solver="auto")`` does: the CUDA Hungarian
    kernel when a GPU is usable, else NumPy or scipy on the CPU.

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
    solution = solve(cost_matrix, maximize=maximize)
    xp = array_module(cost_matrix)
    return xp.asarray(solution.row_ind), xp.asarray(solution.col_ind)
