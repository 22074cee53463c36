"""A GPU solve compares CuPy arrays with numbers through CuPy's ufuncs (``cupy.less(x, 0)``), not
the operators: ``x < 0`` goes through NumPy's ufunc dispatch to ``ndarray.__array_ufunc__``, whose
first call imports cupyx.scipy (with scipy.sparse), 0.19-0.30 s of a cold ``lap solve`` on an H200
(docs/bench/cold-cuda-sap-profile-h200-2026-11-30.txt); so do arithmetic operators with a number
(``x / 2``), and CuPy functions that use them (cupy.bincount, cupy.percentile). Each case runs in
a fresh process and must end with no ``cupyx.scipy`` module loaded, on the engine it names (run
on a GPU machine: pytest -m gpu). Nor may it build one of CuPy's CUB reductions (a whole-array
``.all()``, ``count_nonzero``): each compiles through NVRTC in 3-6 s on a fresh machine
(lapcli.arrays.all_true)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lapcli

pytestmark = pytest.mark.gpu

RUN = """
import importlib.abc, importlib.util, json, re, sys
sys.argv = ["lap", *sys.argv[1:]]
built = set()  # the CUB kernels CuPy builds (or loads from its disk cache) in this process


class RecordCompiles(importlib.abc.MetaPathFinder):  # wraps CuPy's compile once CuPy imports it
    def find_spec(self, name, path, target=None):
        if name != "cupy.cuda.compiler":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            compile_module = module._compile_module_with_cache

            def recorded(source, *args, **kwargs):
                built.update(re.findall(r"__global__\\s+void\\s+(cupy_cub_\\w+)", source))
                return compile_module(source, *args, **kwargs)
            module._compile_module_with_cache = recorded
        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, RecordCompiles())
from lapcli.entry import main
try:
    main()
finally:
    loaded = sorted(name for name in sys.modules if name.startswith("cupyx.scipy"))
    held = {"cupyx.scipy": loaded, "cupy": "cupy" in sys.modules, "cub": sorted(built)}
    print("LOADED", json.dumps(held), file=sys.stderr)
"""
HERE = Path(lapcli.__file__).parents[1]  # the lapcli under test, whatever the working directory


def _lap(*args: str) -> dict:
    """What a fresh ``lap ARGS`` process held at its end: its cupyx.scipy modules, and whether it
    imported CuPy (the command must succeed)."""
    env = {**os.environ, "LAPCLI_DETACH_TEARDOWN": "0"}
    result = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env,
                            cwd=HERE, timeout=300)
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("LOADED")]
    assert lines, result.stderr
    return json.loads(lines[-1].removeprefix("LOADED "))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    where = tmp_path_factory.mktemp("cold")
    rng = np.random.default_rng(11)
    forbidden = np.where(rng.random((1500, 1500)) < 0.01, np.inf, rng.random((1500, 1500)))
    arrays = {
        "int": rng.integers(0, 100 * 2048, (2048, 2048), dtype=np.int32),
        "int4096": rng.integers(0, 100 * 4096, (4096, 4096), dtype=np.int32),  # the auction hands over
        "float": rng.random((2048, 2048)),
        "wide": rng.random((1500, 2048)),
        "forbidden": forbidden,
        "forbidden32": forbidden.astype(np.float32),
        "a": rng.random((3000, 2)),
        "b": rng.random((3000, 2)),
        "a32k": rng.random((32768, 2)),  # the point auction's warm start
        "b32k": rng.random((32768, 2)),
    }
    for name, array in arrays.items():
        np.save(where / f"{name}.npy", array)
    return {name: str(where / f"{name}.npy") for name in arrays}


# (input, options, the engine the report names): every case but auto's integer square runs on CuPy
CASES = [
    ("int4096", ("--solver", "cuda-sap"), "cuda-sap"),
    ("float", ("--solver", "cuda-sap"), "cuda-sap"),
    ("float", ("--solver", "cuda-sap", "--maximize"), "cuda-sap"),
    ("wide", ("--solver", "cuda-sap"), "cuda-sap"),
    ("forbidden", ("--solver", "cuda-sap"), "cuda-sap"),
    ("forbidden32", ("--solver", "cuda-sap"), "cuda-sap"),
    ("float", (), "cuda-sap"),
    ("int", (), "cuda"),  # one solve of an integer square: the driver's copy, no CuPy at all
    ("points", ("--solver", "cuda-sap"), "cuda-sap"),  # the point auction on the coordinates
    ("points", (), "cuda-sap"),  # auto: the cdist matrix built on the GPU
    ("points", ("--metric", "minkowski", "--p", "3"), "cuda-sap"),
    ("points32k", (), "cuda-sap"),
]


@pytest.mark.parametrize("name, options, engine", CASES, ids=lambda x: " ".join(x) if isinstance(x, tuple) else x)
def test_a_solve_loads_no_cupyx_scipy(files, tmp_path, name, options, engine):
    points = {"points": ("a", "b"), "points32k": ("a32k", "b32k")}.get(name)
    inputs = ["--points", files[points[0]], files[points[1]]] if points else [files[name]]
    report = tmp_path / "report.json"
    held = _lap("solve", *inputs, "-o", str(tmp_path / "out.npy"), "--quiet", "--report", str(report), *options)
    assert json.loads(report.read_text())["solver"] == engine
    assert held == {"cupyx.scipy": [], "cupy": engine != "cuda", "cub": []}
    rows = np.load(files[points[0]] if points else files[name]).shape[0]
    assert np.load(tmp_path / "out.npy").shape[0] == rows
