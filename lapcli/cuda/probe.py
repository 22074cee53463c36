"""Whether CUDA can run here, asked as cheaply as possible: ``lap info``, ``auto`` and the registry's
probes read these. No CuPy import where the driver can answer (cuda.bindings, ~20 ms against ~0.25 s).
"""

from __future__ import annotations

import contextlib
import importlib.util
from functools import lru_cache


def cuda_installed() -> tuple[bool, str]:
    """(installed, why not): the packages half of :func:`cuda_status`, without the driver (no
    device is asked for: the command line's early check, which must not wait for the driver)."""
    for module, name in (("cupy", "CuPy"), ("cuda.bindings", "cuda.bindings")):
        if importlib.util.find_spec(module) is None:
            return False, f"{name} is not installed (pip install 'lapcli[cuda13]' or 'lapcli[cuda12]')"
    return True, "CuPy and cuda.bindings are installed"


@lru_cache(maxsize=1)
def cuda_status() -> tuple[bool, str]:
    """(available, why): whether CuPy and cuda.bindings are installed (lapcli's CUDA extras install
    both: CuPy holds the arrays, the driver API compiles and launches every kernel,
    lapcli.cuda.runtime) and a CUDA device is visible. The device count is asked of the driver
    (~0.1 s), not of CuPy, whose import alone costs ~0.25 s that a one-shot solve of a host matrix
    never needs."""
    installed, why = cuda_installed()
    if not installed:
        return False, why
    from . import driver

    try:
        count = driver.device_count()
    except Exception as error:  # no driver library, or the driver finds no device
        return False, f"no CUDA device ({error})".replace("\n", " ")
    if count < 1:
        return False, "no CUDA device"
    return True, f"the CUDA driver sees {count} CUDA device{'s' if count > 1 else ''}"


SEARCH_KERNEL_ARCH = (8, 0)  # kernels/batch_lap.cu's warp argmin is __reduce_min_sync (Ampere and newer)
CLUSTER_KERNEL_ARCH = (9, 0)  # kernels/sap.cu: thread-block clusters


def device_compute_capability(ordinal: int = 0) -> tuple[int, int]:
    """(major, minor), from the driver."""
    from . import driver

    return driver.compute_capability(ordinal)


def cluster_kernel_status(columns: int = 0) -> tuple[bool, str]:
    """(available, why) for kernels/sap.cu (engine cuda-sap above 2048 columns) on ``columns``
    columns: thread-block clusters need compute capability 9.0 (Hopper) or newer, and the columns'
    state must fit a cluster's shared memory (lapcli.cuda.sap_cluster.max_columns), read from the
    driver: auto asks this before it knows whether it needs CuPy, whose import would turn a host
    input of the cuda engine from the driver's copy to CuPy's (lapcli.cuda.hungarian_host)."""
    available, why = search_kernel_status()
    if not available:
        return available, why
    _, too_old = _new_enough(CLUSTER_KERNEL_ARCH, "thread-block clusters need", "Hopper")
    if too_old:
        return False, too_old
    if columns:
        from .driver import max_shared_optin
        from .sap_cluster import max_columns

        limit = max_columns(max_shared_optin())
        if columns > limit:
            return False, f"a thread-block cluster holds {limit} columns on this GPU, not {columns}"
    return True, why


@lru_cache(maxsize=1)
def search_kernel_status() -> tuple[bool, str]:
    """(available, why) for the engines that run kernels/batch_lap.cu (cuda-batch, cuda-sap): a
    CUDA device, of compute capability 8.0 or newer (the default device, as they run on)."""
    available, why = cuda_status()
    if not available:
        return available, why
    arch, too_old = _new_enough(SEARCH_KERNEL_ARCH, "the search kernel needs", "Ampere")
    if too_old:
        return False, too_old
    return True, f"{why}, compute capability {arch[0]}.{arch[1]}"


def _new_enough(required: tuple[int, int], needs: str, family: str) -> tuple[tuple[int, int] | None, str | None]:
    """(the default device's compute capability, None) when it is ``required`` or newer, else
    (None, why not) (``needs``: what needs it; ``family``: the first architecture that has it)."""
    try:
        arch = device_compute_capability()
    except Exception as error:
        return None, f"cannot read the device's compute capability ({error})".replace("\n", " ")
    if arch < required:
        return None, (f"the device has compute capability {arch[0]}.{arch[1]}; {needs} "
                      f"{required[0]}.{required[1]} or newer ({family})")
    return arch, None


def device_context(device: int | None):
    """GPU ``device``'s context (CuPy's), where one is named; else nothing changes (the current device,
    and no CuPy import where none is named)."""
    if device is None:
        return contextlib.nullcontext()
    import cupy

    return cupy.cuda.Device(device)


def free_device_bytes() -> int:
    """Bytes the current GPU could give a new array: what the driver has free plus what CuPy's
    memory pool holds unused."""
    import cupy

    free, _ = cupy.cuda.runtime.memGetInfo()
    return int(free) + int(cupy.get_default_memory_pool().free_bytes())
