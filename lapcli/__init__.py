"""lapcli: the linear assignment problem on NVIDIA GPUs, with a per-step report and an optimality
certificate on every answer of an engine with duals.

``linear_sum_assignment`` is a drop-in for scipy's; ``solve`` returns the full Solution.
"""

__version__ = "0.2.0"

from .api import linear_sum_assignment  # noqa: E402
from .batch import BatchSolution, batch_linear_assignment, solve_batch  # noqa: E402
from .errors import InfeasibleError, LapInputError, SolverError, SolverUnavailable  # noqa: E402
from .facade import solve  # noqa: E402
from .results import Solution, SolveReport  # noqa: E402

__all__ = [
    "BatchSolution",
    "batch_linear_assignment",
    "solve_batch",
    "InfeasibleError",
    "LapInputError",
    "Solution",
    "SolveReport",
    "SolverError",
    "SolverUnavailable",
    "__version__",
    "linear_sum_assignment",
    "solve",
]
