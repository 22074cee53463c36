"""The options every entry takes (``device``, ``timeout``, ``certify``), checked before any work:
bad values are bad input, in one line (lapcli.errors.LapInputError)."""

from __future__ import annotations

import math
import numbers

import numpy as np

from .cuda import probe
from .errors import LapInputError


def check_device(device: int | None) -> None:
    """Refuse a device ordinal that does not exist here, or is no integer (True read as GPU 1), as
    bad input before any work."""
    if device is None:
        return
    if isinstance(device, (bool, np.bool_)) or not isinstance(device, numbers.Integral):
        raise LapInputError(f"device must be a GPU number, not {device!r}")
    available, why = probe.cuda_status()
    if not available:
        raise LapInputError(f"device {device}: {why}")
    import cupy

    count = cupy.cuda.runtime.getDeviceCount()
    if not 0 <= device < count:
        raise LapInputError(f"device {device}: there {'is' if count == 1 else 'are'} {count} CUDA "
                            f"device{'s' if count != 1 else ''} (0 … {count - 1})")


def check_solver_runs_here(solver: str) -> None:
    """Refuse a solver named (not ``auto``) that this machine cannot run (SolverUnavailable, bad
    input on the command line), before any input is read; an unknown name is the registry's error.
    A CUDA engine's packages only: its device is asked for at the solve, so that a cold ``lap
    solve`` keeps starting the driver beside its imports (lapcli.cli.gpu_start)."""
    from .engines import registry

    if solver == "auto":
        return
    engine = registry.get(solver)
    engine.require(probe.cuda_installed() if engine.capabilities.device == "cuda" else None)


def check_timeout(timeout: float | None, solver: str = "auto") -> float | None:
    """A time limit is a positive number of seconds (or None: no limit); returns it, infinity as
    None, so that no launcher turns it into nanoseconds. ``solver``: the CLI's ``--solver``, whose
    matrix engine without a clock (scipy, lapx, numpy, scipy-batch) refuses ``--timeout`` rather
    than run past it; the library solves and says so in its report (lapcli.pipeline.timeout_notes),
    so that one call over several engines keeps working. (Point sets take one with any engine: it
    bounds their certificate's pass too.)"""
    if timeout is not None and not (isinstance(timeout, numbers.Real) and not isinstance(timeout, bool)
                                    and timeout > 0 and timeout == timeout):
        raise LapInputError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if timeout is not None and not math.isinf(timeout) and solver != "auto":
        from .engines import registry

        named = registry.get(solver).capabilities
        if not named.timeout:  # the engines that stop, of the same kind (a matrix, or a stack)
            stopping = ", ".join(name for name, engine in registry.ENGINES.items() if engine.capabilities.timeout
                                 and engine.capabilities.matrix and engine.capabilities.batch == named.batch)
            raise LapInputError(f"solver {solver!r} cannot stop mid-solve, so it takes no timeout; {stopping} "
                                f"do{'es' if ',' not in stopping else ''}")
    return None if timeout is None or math.isinf(timeout) else timeout


def check_certify(certify) -> bool | None:
    """``certify`` as None (by default), True or False; NumPy's booleans and 0 or 1 count as theirs
    (``certify=np.False_`` recovered and checked the duals, as ``certify is not False`` read it)."""
    if certify is None or isinstance(certify, (bool, np.bool_)) or (isinstance(certify, numbers.Integral)
                                                                   and certify in (0, 1)):
        return None if certify is None else bool(certify)
    raise LapInputError(f"certify must be True, False or None, not {certify!r}")


def check_maximize(maximize, problems: bool = True) -> bool:
    """``maximize`` as one sense for every problem of a call: an array or list of them (one a problem)
    is refused in those words; it read as entries (a 2-problem array: "invalid numeric entries"), and
    as True where one problem is solved (``[False]`` maximised, a word like "False" too). ``problems``:
    whether the call solves several, which the words say."""
    word = isinstance(maximize, (str, bytes)) or getattr(getattr(maximize, "dtype", None), "kind", None) in ("U", "S")
    if getattr(maximize, "ndim", 0) or isinstance(maximize, (list, tuple)) or word:
        if not problems or word:  # a word (np.array("False") too) is no sense for each problem either
            raise LapInputError(f"maximize must be True or False, not {maximize!r}")
        raise LapInputError(f"maximize is one True or False for every problem of a call, not {maximize!r}: solve "
                            "those to maximise and those to minimise in two calls")
    return bool(maximize)
