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


def test_the_cluster_probe_asks_the_driver_and_imports_no_cupy(monkeypatch):
    """auto asks above 2048 columns whether a thread-block cluster holds them, before it knows
    whether CuPy is needed; asked through CuPy, the question imported it, and the cuda engine's
    host input then went through CuPy instead of the driver's copy (H200: a cold 4096² solve
    1.67 s against --solver cuda's 0.56-0.61). The opt-in shared memory comes from the driver."""
    import sys

    from lapcli.cuda import driver, sap_cluster

    imports = []

    class Watch:  # sees an attempt to import CuPy, whether or not it is installed here
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("cupy", "cupyx"):
                imports.append(name)
            return None

    monkeypatch.setattr(probe, "search_kernel_status", lambda: (True, "a GPU, compute capability 9.0"))
    monkeypatch.setattr(probe, "device_compute_capability", lambda ordinal=0: (9, 0))
    monkeypatch.setattr(driver, "max_shared_optin", lambda ordinal=0: 232448)  # an H100's or H200's
    for name in [name for name in sys.modules if name.split(".")[0] in ("cupy", "cupyx")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [Watch(), *sys.meta_path])
    limit = sap_cluster.max_columns(232448)
    assert probe.cluster_kernel_status(limit)[0]
    available, why = probe.cluster_kernel_status(limit + 1)
    assert not available and f"holds {limit} columns on this GPU, not {limit + 1}" in why
    assert imports == []
