"""A (B, n, m) dask array solved lazily, one ``lapcli.solve_batch`` per block along B
(``solve_dask_array``): a problem lives in one block, and an error names its problems among the
whole array's. Dask is optional: importing this module never imports it (``require_dask``, which
lapcli.scale's routes call too, says how to install it)."""

from __future__ import annotations

import re

import numpy as np

from .errors import InfeasibleError, LapInputError, LapTypeError

NEEDS_DASK = "scale-out needs Dask: pip install 'lapcli[dask]'"


def require_dask():
    try:
        import distributed
    except ImportError:
        raise LapInputError(NEEDS_DASK) from None
    return distributed


def _solve_block(block, solver: str, maximize: bool, total: int, block_info=None):
    """One block's columns; an error names the block's problems among the array's ``total``
    (solve_batch counts them within the block)."""
    from .pipeline import solve_batch

    try:
        return solve_batch(block, solver=solver, maximize=maximize).col_ind
    except (InfeasibleError, LapInputError, LapTypeError) as error:
        if block_info is None:
            raise
        first, stop = block_info[0]["array-location"][0]
        # solve_batch counts the block's problems ("problem 1 of 3"): named as the array's
        message = re.sub(r"(problems?) ((?:\d+|, |…)+?) of \d+", lambda found: _in_array(found, first, total), str(error))
        where = f"in the block of problems {first} … {stop - 1} of the dask array's {total}"
        raise type(error)(f"{message} ({where})") from None


def _in_array(found, first: int, total: int) -> str:
    """``problem k of B`` (or ``problems k, l of B``: lapcli.errors.members_text) of a block from
    ``first`` as the array's."""
    listed = re.sub(r"\d+", lambda number: str(first + int(number.group(0))), found.group(2))
    return f"{found.group(1)} {listed} of {total}"


def solve_dask_array(costs, *, maximize: bool = False, solver: str = "auto"):
    """The column of each row for every problem of a (B, n, m) dask array, lazily: a (B, n) int64
    dask array, one ``solve_batch`` per block along B (the other axes are rechunked whole).
    Computing it gives what ``solve_batch(costs.compute()).col_ind`` gives; an infeasible member
    raises then (InfeasibleError), as solve_batch does. (Also lapcli.scale.solve_dask_array.)"""
    require_dask()
    import dask.array as da

    if not isinstance(costs, da.Array):
        raise LapInputError("solve_dask_array takes a dask array; use solve_batch for NumPy, CuPy or torch")
    from .options import check_maximize

    maximize = check_maximize(maximize)  # checked now, as the solver, not in a block when computed
    if solver != "auto":  # checked now, not once a block when computed (whether it runs: on the workers)
        from .engines.auto import batch_engine

        batch_engine(solver)
    if costs.ndim != 3:
        raise LapInputError(f"costs is {costs.ndim}-D: expected a stack of matrices (B, n, m)")
    if any(np.isnan(size) for size in costs.shape):
        raise LapInputError("costs has unknown chunk sizes: call compute_chunk_sizes() first")
    if len(costs.chunks[1]) > 1 or len(costs.chunks[2]) > 1:
        costs = costs.rechunk({1: -1, 2: -1})  # a problem must live in one block
    n = costs.shape[1]
    meta = np.empty((0, 0), dtype=np.int64)
    return costs.map_blocks(_solve_block, solver, maximize, costs.shape[0], drop_axis=2, chunks=(costs.chunks[0], (n,)),
                            dtype=np.int64, meta=meta)
