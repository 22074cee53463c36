"""``lap info``: the engines of the registry, whether each can run here and why not, the CUDA
devices, and the versions that matter — what a bug report needs."""

from __future__ import annotations

import platform
from dataclasses import asdict
from importlib import metadata
from typing import Any

from . import __version__
from .cuda.probe import cuda_status
from .engines.registry import ENGINES

VERSIONED = ("numpy", "scipy", "click", "rich", "h5py", "cupy-cuda13x", "cupy-cuda12x", "lapx", "torch",
             "dask", "distributed", "dask-cuda")


def collect() -> dict[str, Any]:
    engines = []
    for engine in ENGINES.values():
        available, why = engine.available()
        engines.append({"name": engine.name, "available": available, "why": why, "summary": engine.summary,
                        "capabilities": asdict(engine.capabilities)})
    versions = {"lapcli": __version__, "python": platform.python_version()}
    for name in VERSIONED:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"engines": engines, "devices": cuda_devices(), "versions": versions,
            "platform": platform.platform()}


def cuda_devices() -> list[dict[str, Any]]:
    available, _ = cuda_status()
    if not available:
        return []
    import cupy

    devices = []
    for index in range(cupy.cuda.runtime.getDeviceCount()):
        props = cupy.cuda.runtime.getDeviceProperties(index)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        devices.append({"id": index, "name": name, "memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
                        "multiprocessors": props["multiProcessorCount"],
                        "compute_capability": f"{props['major']}.{props['minor']}"})
    return devices


def render(facts: dict[str, Any], out) -> None:
    """Draw the facts on the Rich console ``out``."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title="engines", title_justify="left")
    for column in ("engine", "here", "device", "batch", "k×m", "steps", "own duals", "why / summary"):
        table.add_column(column)
    for engine in facts["engines"]:
        caps = engine["capabilities"]
        yes = lambda flag: "yes" if flag else "-"  # noqa: E731
        table.add_row(engine["name"], "yes" if engine["available"] else "[red]no[/]", caps["device"],
                      yes(caps["batch"]), yes(caps["rectangular"]), yes(caps["steps"]), yes(caps["duals"]),
                      escape(engine["why"] if not engine["available"] else engine["summary"]))
    out.print(table)
    if facts["devices"]:
        for device in facts["devices"]:
            out.print(f"cuda:{device['id']} {device['name']}  {device['memory_gib']} GiB  "
                      f"{device['multiprocessors']} SMs  sm_{device['compute_capability'].replace('.', '')}")
    else:
        out.print(f"no CUDA device: {escape(cuda_status()[1])}")  # its install hint has brackets
    out.print("  ".join(f"{name} {version}" for name, version in facts["versions"].items()))
