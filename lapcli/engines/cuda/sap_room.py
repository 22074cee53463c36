"""Whether engine ``cuda-sap``'s cluster kernel (kernels/sap.cu) can take a problem on this GPU:
the one refusal the dense squares, the rectangles and the point sets share."""

from __future__ import annotations

from ...cuda import sap_cluster
from ...cuda.probe import cluster_kernel_status
from ...errors import LapInputError, SolverUnavailable


def check_clusters(columns: int, what: str) -> None:
    """Refuse what the cluster kernel cannot run here (``what``: the problems it was given, for
    the message): no thread-block clusters, that is no Hopper (SolverUnavailable), or more than
    ``columns`` (0: no limit to check) than a cluster holds on this GPU (bad input for the named
    solver; auto never sends such a problem here)."""
    clusters, why = cluster_kernel_status()
    if not clusters:
        raise SolverUnavailable(f"solver 'cuda-sap' {what} cannot run here: {why}")
    limit = sap_cluster.device_max_columns()
    if columns and columns > limit:
        raise LapInputError(f"solver 'cuda-sap' takes at most {limit} columns on this GPU, not {columns} "
                            "(use 'cuda' or 'auto')")
