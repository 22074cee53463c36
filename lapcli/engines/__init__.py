"""The engines that solve assignment problems, behind one registry (``registry.py``) and one
result type (``base.EngineResult``). Importing this package imports no engine."""

from ..cuda.probe import cuda_status
from .registry import ENGINES, Capabilities, Engine, get, register, solver_choices

__all__ = ["ENGINES", "Capabilities", "Engine", "cuda_status", "get", "register", "solver_choices"]
