"""The one compile path of lapcli's kernels: NVRTC (``cuda.bindings.nvrtc``) to a cubin, kept on
disk so that a later process loads it in under a millisecond (lapcli.cuda.runtime loads it).

The cache key is a SHA-256 of the source, the options (defines and architecture), and the kernel
names asked for; the cubin and its lowered names are written whole or not at all (a temporary file
and a rename), so several processes may compile at once. The NVRTC version is not in the key
(importing NVRTC to ask costs a cold process ~50 ms): a cubin this driver cannot load is compiled
again (:func:`load_or_compile`). The folder is listed in docs/environment.md; CuPy's own cache
holds only the element-wise kernels CuPy generates for its array operations.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..errors import SolverError


def cache_dir() -> Path:
    """Where compiled kernels are kept: $LAPCLI_CACHE_DIR, else $XDG_CACHE_HOME/lapcli, else
    ~/.cache/lapcli."""
    if os.environ.get("LAPCLI_CACHE_DIR"):
        return Path(os.environ["LAPCLI_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lapcli"


def compile_options(defines: tuple[str, ...], arch: tuple[int, int]) -> list[str]:
    """NVRTC options: the kernel's -D defines, the device's architecture, C++17 and -ftz=true
    (flush single-precision denormals, as CuPy compiles by default)."""
    return ["-std=c++17", "-ftz=true", f"--gpu-architecture=sm_{arch[0]}{arch[1]}", *defines]


CCCL_HEADERS = (("nv", "target"), ("cuda", "std", "type_traits"))  # what cooperative_groups.h includes


def cuda_include_dirs() -> list[str]:
    """Folders for NVRTC: one holding cooperative_groups.h, and one holding the CCCL headers it
    includes (nv/target and cuda/std/type_traits): the same folder in a CUDA toolkit, or its cccl/
    subfolder, or the CCCL folder of the Python packages. A pip-installed include folder may lack
    CCCL, then the next candidate is tried; CUDA 13.0 keeps nv/ beside cooperative_groups.h but
    cuda/std/ only under cccl/, so both headers are looked for."""
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError:  # an older cuda-pathfinder
        find_nvidia_header_directory = None

    def packaged(name: str) -> list[str]:
        try:
            found = find_nvidia_header_directory(name) if find_nvidia_header_directory else None
        except Exception:  # not installed in this environment
            found = None
        return [found] if found else []

    roots = packaged("cudart") + [os.path.join(os.environ[v], "include") for v in ("CUDA_PATH", "CUDA_HOME")
                                  if os.environ.get(v)] + ["/usr/local/cuda/include"]
    for root in roots:
        if not os.path.isfile(os.path.join(root, "cooperative_groups.h")):
            continue
        for cccl in (root, os.path.join(root, "cccl"), *packaged("cccl")):
            if all(os.path.isfile(os.path.join(cccl, *header)) for header in CCCL_HEADERS):
                return [root] if cccl == root else [root, cccl]
    return []


def cached_cubin_paths(label: str, source: str, options: list[str], names: dict[str, str]) -> tuple[Path, Path]:
    """(cubin path, lowered-names path) of one compile: the key covers the source, the options and
    the kernel names (see the module docstring for why not NVRTC's version)."""
    key = hashlib.sha256(json.dumps([source, options, sorted(names.items())]).encode()).hexdigest()[:32]
    folder = cache_dir()
    return folder / f"{label}-{key}.cubin", folder / f"{label}-{key}.json"


def compiled_cubin(label: str, source: str, options: list[str], names: dict[str, str], fresh: bool = False):
    """(cubin, lowered kernel names): from the cache unless ``fresh``, else compiled now and stored
    (a failed store only costs the next process a compile)."""
    cubin_path, names_path = cached_cubin_paths(label, source, options, names)
    if not fresh:
        try:
            return cubin_path.read_bytes(), json.loads(names_path.read_text())
        except (OSError, ValueError):
            pass
    cubin, lowered = nvrtc_compile(label, source, options, names)
    try:
        cubin_path.parent.mkdir(parents=True, exist_ok=True)
        for path, data in ((names_path, json.dumps(lowered).encode()), (cubin_path, cubin)):
            temporary = path.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_bytes(data)
            os.replace(temporary, path)  # whole or absent, also with several processes compiling
    except OSError:
        pass
    return cubin, lowered


def load_or_compile(gpu, label: str, source: str, options: list[str], names: dict[str, str]) -> dict:
    """{name: CUfunction} on ``gpu`` (lapcli.cuda.driver.Gpu), from the disk cache or compiled; a
    cached cubin the driver refuses (another CUDA version) is compiled again."""
    cubin, lowered = compiled_cubin(label, source, options, names)
    try:
        return gpu.load(cubin, {name: lowered[name] for name in names})
    except SolverError:
        cubin, lowered = compiled_cubin(label, source, options, names, fresh=True)
        return gpu.load(cubin, {name: lowered[name] for name in names})


def _nvrtc_check(result):
    status, *values = result
    if getattr(status, "value", status) != 0:
        raise SolverError(f"NVRTC failed: {status}")
    return values[0] if len(values) == 1 else values


def nvrtc_compile(label: str, source: str, options: list[str], names: dict[str, str]) -> tuple[bytes, dict[str, str]]:
    """Compile with NVRTC to a cubin for the options' architecture (the CUDA headers' folders
    added); return it with the lowered (mangled) name of each kernel."""
    from cuda.bindings import nvrtc

    options = [*options, *(f"-I{folder}" for folder in cuda_include_dirs())]
    program = _nvrtc_check(nvrtc.nvrtcCreateProgram(source.encode(), f"{label}.cu".encode(), 0, [], []))
    try:
        for expression in names.values():
            _nvrtc_check(nvrtc.nvrtcAddNameExpression(program, expression.encode()))
        status = nvrtc.nvrtcCompileProgram(program, len(options), [o.encode() for o in options])[0]
        if getattr(status, "value", status) != 0:
            size = _nvrtc_check(nvrtc.nvrtcGetProgramLogSize(program))
            log = b" " * size
            nvrtc.nvrtcGetProgramLog(program, log)
            raise SolverError(f"NVRTC could not compile the kernel: {log.decode(errors='replace').strip()[:2000]}")
        cubin = b" " * _nvrtc_check(nvrtc.nvrtcGetCUBINSize(program))
        _nvrtc_check(nvrtc.nvrtcGetCUBIN(program, cubin))
        lowered = {name: _nvrtc_check(nvrtc.nvrtcGetLoweredName(program, expression.encode())).decode()
                   for name, expression in names.items()}
        return cubin, lowered
    finally:
        nvrtc.nvrtcDestroyProgram(program)
