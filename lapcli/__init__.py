"""lapcli: the linear assignment problem on NVIDIA GPUs, with a per-step report and an optimality
certificate on every answer of an engine with duals.

``linear_sum_assignment`` is a drop-in for scipy's; ``solve`` returns the full Solution.

The public names are imported on first use (PEP 562), so that ``import lapcli.<module>`` costs no
NumPy import: the ``lap`` command starts the CUDA driver before NumPy loads (lapcli/cli/gpu_start.py).
"""

__version__ = "0.2.0"

# public name -> the module that defines it
_EXPORTS = {
    "linear_sum_assignment": "api",
    "BatchSolution": "results",
    "batch_linear_assignment": "api",
    "match": "api",
    "solve_batch": "pipeline",
    "InfeasibleError": "errors",
    "LapInputError": "errors",
    "SolverError": "errors",
    "SolverUnavailable": "errors",
    "solve": "pipeline",
    "solve_points": "pipeline_points",
    "Solution": "results",
    "SolveReport": "results",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str):
    from importlib import import_module
    from importlib.util import find_spec

    module = _EXPORTS.get(name)
    if module is None:
        if not name.startswith("_") and find_spec(f"{__name__}.{name}") is not None:
            return import_module(f".{name}", __name__)  # a submodule, as `import lapcli` used to give
        raise AttributeError(f"module 'lapcli' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # once: later lookups do not come back here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
