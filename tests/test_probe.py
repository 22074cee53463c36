"""The CUDA probe asks for everything the CUDA engines need: CuPy (the arrays) and cuda.bindings
(the driver API that compiles and launches every kernel), before any device is counted."""

import importlib.util

from lapcli.cuda import probe


def test_cuda_is_not_available_without_the_driver_bindings(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: object() if name == "cupy" else None if name == "cuda.bindings"
                        else real(name, *args))
    probe.cuda_status.cache_clear()
    try:
        available, why = probe.cuda_status()
    finally:
        probe.cuda_status.cache_clear()
    assert not available and "cuda.bindings is not installed" in why and "lapcli[cuda13]" in why
