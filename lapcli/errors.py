"""Exceptions that carry a user-facing meaning, and the CLI exit code that goes with each.

Input problems subclass ValueError/TypeError so that the Python API raises what
scipy.optimize.linear_sum_assignment raises for the same input.
"""


class LapInputError(ValueError):
    """The input cannot be read or is not a valid cost matrix (CLI exit code 2)."""


class TooWideError(LapInputError):
    """Costs too wide for one route's arithmetic: integers past a work stack's exact int64 duals,
    one stack that pads members of several types, or finite floats whose spread leaves no float64
    above them to mark forbidden entries. Where the GPU's packed stack refuses a ragged batch under
    ``auto`` (no dtype asked for), scipy solves each member in its own type (floats scaled by a power
    of two where their sums need the headroom), as on the CPU; where a solver or dtype was asked
    for, and for a device list whose members share no exact type (they cannot be gathered into one
    device array), the refusal stands."""

    @property
    def fact(self) -> str:
        """The refusal without its advice (the words before its first "; "): the reason a route
        that solved the costs after all reports, where the advice would mislead."""
        return str(self).split("; ")[0]


class LapTypeError(TypeError):
    """Costs of a non-numeric type (CLI exit code 2); a TypeError, as scipy raises for them."""


class LapOutputError(OSError):
    """An output could not be written: no space left, a quota, an I/O error (CLI exit code 1: neither
    bad input nor a bug). The message is one line, ``cannot write NAME: reason``."""


class InfeasibleError(ValueError):
    """No assignment of finite cost exists (CLI exit code 1). Same message as scipy."""

    def __init__(self, message: str = "cost matrix is infeasible"):
        super().__init__(message)


class SolverError(RuntimeError):
    """A solver stopped without an answer: a guard fired, a timeout, no device memory."""


class SolverUnavailable(RuntimeError):
    """The requested solver cannot run here (no CuPy, no CUDA device, peer not installed)."""


def members_text(indices, batch: int) -> str:
    """"problem 3 of 6", "problems 1, 4 of 9": the members of a batch an error names."""
    indices = [int(i) for i in indices]
    shown = ", ".join(map(str, indices[:20])) + (", …" if len(indices) > 20 else "")
    return f"problem{'s' if len(indices) > 1 else ''} {shown} of {batch}"
