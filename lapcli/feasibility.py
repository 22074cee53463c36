"""Whether each problem holding forbidden pairs has an assignment at all: a maximum bipartite
matching (Hopcroft–Karp, scipy.sparse.csgraph) of its allowed pairs. scipy.sparse's first import
(~0.2 s in a cold process) is a one-off set-up, timed apart: a report's total_ms measures the solve."""

from __future__ import annotations

import time

import numpy as np

from .arrays import host


def infeasible_members(stack, forbidden: np.ndarray, maximize: bool, xp, set_up: dict | None = None) -> list[int]:
    """The problems whose allowed (finite) pairs hold no assignment of the smaller side: a maximum
    bipartite matching of each problem with forbidden entries. ``set_up`` (a Problem's) gets the
    ms the matching's import took added to its ``import_ms``."""
    if not forbidden.any():
        return []
    begin = time.perf_counter()
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    if set_up is not None:
        set_up["import_ms"] = set_up.get("import_ms", 0.0) + (time.perf_counter() - begin) * 1e3
    bad = []
    for b in np.flatnonzero(forbidden):
        mask = host(xp.not_equal(stack[b], -np.inf if maximize else np.inf))
        if mask.shape[0] > mask.shape[1]:
            mask = mask.T
        if (maximum_bipartite_matching(csr_matrix(mask), perm_type="column") < 0).any():
            bad.append(int(b))
    return bad
