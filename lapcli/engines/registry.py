"""The one list of engines. Everything that names engines (``--solver`` choices, ``auto``,
``lap bench``, ``lap info``, the docs) reads it; adding an engine is one module and one
``register`` call below.

An engine module defines ``run(problem, *, timeout=None, device=None) -> EngineResult`` for one
problem (``lapcli.problem.Problem``), and ``run_points`` for two point sets where it computes
their costs itself (``capabilities.points``); a batch engine (``capabilities.batch``) defines
``run_batch(batch_problem, *, timeout=None, device=None) -> BatchEngineResult`` instead.
Modules are imported only when an engine runs, so listing engines costs no CuPy or scipy import.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from functools import cache
from typing import Callable

from ..cuda.probe import cuda_status, search_kernel_status
from ..errors import LapInputError, SolverUnavailable

ALL_DTYPES = ("int32", "int64", "float32", "float64")


@dataclass(frozen=True)
class Capabilities:
    device: str  # "cpu" or "cuda"
    batch: bool = False  # solves a stack of problems in one call
    rectangular: bool = False  # k × m natively (False: padded to max(k, m) square)
    steps: bool = False  # a per-step report
    timeout: bool = False  # honours timeout=
    duals: bool = False  # returns duals, so every answer is certified
    dtypes: tuple[str, ...] = ALL_DTYPES  # working dtypes
    max_columns: int | None = None  # the most columns (after transposing tall problems) it takes
    # checks NaN / infinities itself, where its copy of the input lives (Problem.check_entries_on;
    # a batch engine raises EntriesNeedChecking): no host pass over the input before the upload
    checks_entries: bool = False
    # solves two point sets from their coordinates (``run_points(point_problem, *, timeout, device,
    # progress, certify)``, lapcli.points), never storing the matrix; other engines get the cdist matrix
    points: bool = False
    matrix: bool = True  # solves a cost matrix (False: point sets only)


@dataclass(frozen=True)
class Engine:
    name: str
    summary: str
    module: str
    capabilities: Capabilities
    probe: Callable[[], tuple[bool, str]]  # (available here, why / why not)

    def available(self) -> tuple[bool, str]:
        return self.probe()

    def require(self, status: tuple[bool, str] | None = None) -> None:
        """SolverUnavailable, in its one wording, where this engine cannot run here (``status``: a
        probe's (available, why) to judge by in place of the engine's own)."""
        available, why = status or self.available()
        if not available:
            raise SolverUnavailable(f"solver {self.name!r} cannot run here: {why}")

    def load(self):
        """The engine's module, imported now; SolverUnavailable when it cannot run here."""
        self.require()
        module = _LOADED.get(self.module)  # a small batch's whole call is ~0.1 ms: no import machinery
        if module is None:
            module = _LOADED[self.module] = importlib.import_module(self.module)
        return module


_LOADED: dict = {}  # module name -> the imported engine module


ENGINES: dict[str, Engine] = {}


def register(engine: Engine) -> Engine:
    if engine.name in ENGINES or engine.name == "auto":
        raise ValueError(f"engine {engine.name!r} is registered twice")
    ENGINES[engine.name] = engine
    return engine


def get(name: str) -> Engine:
    try:
        return ENGINES[name]
    except (KeyError, TypeError):  # (a list or dict for a name: unhashable)
        raise LapInputError(f"unknown solver {name!r}; choose one of {', '.join(solver_choices())}") from None


def solver_choices(batch: bool | None = None, matrix: bool | None = None) -> tuple[str, ...]:
    """``auto`` and every registered engine (only batch engines when batch=True; only those that
    solve a cost matrix when matrix=True, not point sets alone)."""
    names = [e.name for e in ENGINES.values() if (batch is None or e.capabilities.batch == batch)
             and (matrix is None or e.capabilities.matrix == matrix)]
    return ("auto", *names)


# ----------------------------------------------------------------------------- probes
# (the CUDA ones, cuda_status and search_kernel_status, are lapcli.cuda.probe's)
@cache
def lapx_status() -> tuple[bool, str]:
    """Available where lapx is installed and its import package ``lap`` imports (lapx_module: the
    distribution's metadata, ~2 ms, then the import, ~0.2 ms after NumPy's), once a process: ``auto``
    asks on square CPU solves (a metadata read each made a 64 × 64 solve six times scipy's)."""
    from importlib import metadata

    from .cpu.lapx import lapx_module

    try:
        module = lapx_module()
    except ImportError as error:
        return False, str(error)
    return True, f"lapx {getattr(module, '__version__', None) or metadata.version('lapx')} is installed"


def always() -> tuple[bool, str]:
    return True, "always available"


# ----------------------------------------------------------------------------- the engines
register(Engine(
    "cuda", "classical Hungarian, steps 1-6 in one cooperative CUDA launch",
    "lapcli.engines.cuda.hungarian",
    Capabilities(device="cuda", steps=True, timeout=True, duals=True, checks_entries=True),
    cuda_status,
))
register(Engine(
    "cuda-stepwise", "the same CUDA steps, one launch per step (the ablation baseline)",
    "lapcli.engines.cuda.stepwise",
    Capabilities(device="cuda", steps=True, timeout=True, duals=True, checks_entries=True),
    cuda_status,
))
register(Engine(
    "cuda-sap", "the cuda kernel's auction start, then shortest augmenting paths (Jonker-Volgenant): in one "
    "block up to 2048 columns, each search over a thread-block cluster above",
    "lapcli.engines.cuda.sap",
    # the columns a cluster's shared memory holds on an H100 or H200 (lapcli.cuda.sap_cluster.max_columns)
    Capabilities(device="cuda", steps=True, rectangular=True, timeout=True, duals=True, checks_entries=True,
                 max_columns=55296, points=True),
    search_kernel_status,
))
register(Engine(
    "sorted", "two 1-D point sets matched in sorted order (their costs are Monge), certified",
    "lapcli.engines.cpu.sorted_points",
    Capabilities(device="cpu", steps=True, rectangular=True, timeout=True, duals=True, points=True, matrix=False),
    always,
))
register(Engine(
    "numpy", "the six Hungarian steps in NumPy: the kernel's readable specification",
    "lapcli.engines.cpu.numpy",
    Capabilities(device="cpu", steps=True, duals=True),
    always,
))
register(Engine(
    "scipy", "scipy.optimize.linear_sum_assignment (shortest augmenting path, Crouse 2016)",
    "lapcli.engines.cpu.scipy",
    Capabilities(device="cpu", rectangular=True, dtypes=("float64",)),
    always,
))
register(Engine(
    "lapx", "lapx's lapjv (Jonker-Volgenant, one CPU core), an optional peer",
    "lapcli.engines.cpu.lapx",
    Capabilities(device="cpu", rectangular=True, dtypes=("float64",)),
    lapx_status,
))
register(Engine(
    "cuda-batch", "shortest augmenting path per problem, the whole stack in one CUDA launch",
    "lapcli.engines.cuda.batch",
    Capabilities(device="cuda", batch=True, rectangular=True, timeout=True, duals=True, max_columns=2048,
                 checks_entries=True),
    search_kernel_status,
))
register(Engine(
    "scipy-batch", "scipy per problem over a thread pool (scipy releases the GIL)",
    "lapcli.engines.cpu.scipy_batch",
    Capabilities(device="cpu", batch=True, rectangular=True, dtypes=("float64",)),
    always,
))
