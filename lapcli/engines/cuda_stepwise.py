"""Engine ``cuda-stepwise``: the CUDA steps launched one at a time from a host loop (the baseline)."""

from .cuda_hungarian import run_stepwise as run  # noqa: F401
