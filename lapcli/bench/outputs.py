"""The records of a sweep: the environment it ran in, and its results as JSON, CSV or a plot (each
file written atomically)."""

from __future__ import annotations

import datetime
import math
import os
import platform
from dataclasses import asdict
from typing import Any

import numpy as np

from .. import __version__
from ..generate import RANGELESS_KINDS
from .suites import BenchSettings, SolveTiming
from .table import results_kinds


def environment() -> dict[str, Any]:
    import scipy

    env: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "lapcli": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
    }
    try:
        import cupy

        env["cupy"] = cupy.__version__
        props = cupy.cuda.runtime.getDeviceProperties(0)
        name = props["name"]
        env["device"] = name.decode() if isinstance(name, bytes) else str(name)
        env["driver"] = cupy.cuda.runtime.driverGetVersion()
        env["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
    except Exception as error:  # no CuPy or no GPU: the suite ran on the CPU
        env["device"] = f"cpu: {env['cpu']} ({env['cpu_count']} cores)"
        env["gpu"] = f"none ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})"
    from importlib import metadata

    try:
        env["lapx"] = metadata.version("lapx")  # its module is named lap
    except metadata.PackageNotFoundError:
        pass
    return env


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what the platform module knows (on Linux
    only the architecture, x86_64): the CPU peers' times depend on it."""
    try:
        with open("/proc/cpuinfo") as info:
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        model = ""
    return model or platform.processor() or platform.machine()


def json_bytes(settings: BenchSettings, results: list[SolveTiming], env: dict) -> bytes:
    import json

    payload = {
        "environment": env,
        "settings": asdict(settings),
        "timing": "host array to host assignment (H2D + solve + D2H), "
                  f"{'warm' if settings.warmup else 'no warm-up'}, per repeat",
        "results": [asdict(r) | {"median_ms": r.median_ms} for r in results],
    }
    return (json.dumps(payload, indent=1) + "\n").encode()


def csv_bytes(results: list[SolveTiming], env: dict) -> bytes:
    import csv
    import io

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["n", "range", "dtype", "solver", "status", "repeat", "ms", "objective", "device", "kind", "engine",
                     "message"])
    for r in results:  # message: why a cell was skipped, failed or stopped (empty when it ran)
        for i, ms in enumerate(r.times_ms or [None]):
            writer.writerow([r.n, r.range_factor, r.dtype, r.solver, r.status, i, ms, r.objective, env.get("device"),
                             r.kind, r.engine, r.message])
    return buffer.getvalue().encode()


def plot_bytes(results: list[SolveTiming], env: dict) -> bytes:
    """Time against n, one panel per range (per kind and range when the kinds differ; one panel
    per float kind, whose R does not matter), log scales (needs matplotlib: lapcli[plot]). Every
    cell with a time is drawn, those past the limit ringed, as the table shows them "past limit"."""
    import matplotlib

    matplotlib.use("Agg")
    import io

    import matplotlib.pyplot as plt

    kinds = results_kinds(results)
    panels = sorted({(kinds.index(r.kind), r.range_factor) for r in results})
    solvers = list(dict.fromkeys(r.solver for r in results))
    columns = min(4, len(panels))
    rows = math.ceil(len(panels) / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.2 * rows), squeeze=False)
    for ax, (kind_index, range_factor) in zip(axes.flat, panels):
        kind = kinds[kind_index]
        panel = [r for r in results if r.kind == kind and r.range_factor == range_factor and r.timed]
        dtypes = list(dict.fromkeys(r.dtype for r in panel))
        for solver in solvers:
            for dtype in dtypes:
                cells = sorted((r.n, r.median_ms, r.status) for r in panel if r.solver == solver and r.dtype == dtype)
                if cells:
                    line, = ax.plot([c[0] for c in cells], [c[1] for c in cells], marker="o",
                                    label=solver if len(dtypes) == 1 else f"{solver} {dtype}")
                    past = [c for c in cells if c[2] == "timeout"]  # the table's "past limit": a time, ringed
                    ax.plot([c[0] for c in past], [c[1] for c in past], linestyle="", marker="o", markersize=11,
                            markerfacecolor="none", color=line.get_color())
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        kind_ranges = {r.range_factor for r in results if r.kind == kind}
        if kind in RANGELESS_KINDS and len(kind_ranges) == 1:
            title = kind  # R does not shape these values
        else:
            title = f"{kind}, R = {range_factor:g}·n" if len(kinds) > 1 else f"R = {range_factor:g}·n"
        ax.set_title(title)
        ax.set_xlabel("n")
        ax.set_ylabel("median ms")
        ax.grid(True, which="both", alpha=0.3)
        if len(dtypes) > 1:
            ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    if axes.flat[0].get_legend_handles_labels()[0]:  # none where no cell of the first panel has a time
        axes.flat[0].legend()
    fig.suptitle(f"lapcli bench on {env.get('device', '?')} ({env.get('date', '')[:10]})")
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=110)
    plt.close(fig)
    return image.getvalue()
