"""A GPU solve compares CuPy arrays with numbers through CuPy's ufuncs (``cupy.less(x, 0)``), not
the operators: ``x < 0`` goes through NumPy's ufunc dispatch to ``ndarray.__array_ufunc__``, whose
first call imports cupyx.scipy (with scipy.sparse), 0.19-0.30 s of a cold ``lap solve`` on an H200
(docs/bench/cold-cuda-sap-profile-h200-2026-11-30.txt). Each case runs in a fresh process and
must end with no ``cupyx.scipy`` module loaded (run on a GPU machine: pytest -m gpu)."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytestmark = pytest.mark.gpu

RUN = """
import json, sys
sys.argv = ["lap", *sys.argv[1:]]
from lapcli.entry import main
try:
    main()
finally:
    loaded = sorted(name for name in sys.modules if name.startswith("cupyx.scipy"))
    print("LOADED", json.dumps(loaded), file=sys.stderr)
"""


def _lap(*args: str) -> list[str]:
    """The cupyx.scipy modules a fresh ``lap ARGS`` process held at its end (it must succeed)."""
    env = {**os.environ, "LAPCLI_DETACH_TEARDOWN": "0"}
    result = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    line = [line for line in result.stderr.splitlines() if line.startswith("LOADED")][-1]
    return json.loads(line.removeprefix("LOADED "))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    where = tmp_path_factory.mktemp("cold")
    rng = np.random.default_rng(11)
    paths = {
        "int": rng.integers(0, 100 * 2048, (2048, 2048), dtype=np.int32),
        "float": rng.random((2048, 2048)),
        "wide": rng.random((1500, 2048)),
        "forbidden": np.where(rng.random((1500, 1500)) < 0.01, np.inf, rng.random((1500, 1500))),
        "a": rng.random((3000, 2)),
        "b": rng.random((3000, 2)),
    }
    for name, array in paths.items():
        np.save(where / f"{name}.npy", array)
    return {name: str(where / f"{name}.npy") for name in paths}


@pytest.mark.parametrize("case", [
    ("int", "--solver", "cuda-sap"),
    ("float", "--solver", "cuda-sap"),
    ("float", "--solver", "cuda-sap", "--maximize"),
    ("wide", "--solver", "cuda-sap"),
    ("forbidden", "--solver", "cuda-sap"),
    ("float",),
    ("int",),
    ("points",),
], ids=lambda case: " ".join(case))
def test_a_solve_loads_no_cupyx_scipy(files, tmp_path, case):
    name, *options = case
    inputs = ["--points", files["a"], files["b"]] if name == "points" else [files[name]]
    assert _lap("solve", *inputs, "-o", str(tmp_path / "out.npy"), "--quiet", *options) == []
    assert np.load(tmp_path / "out.npy").shape[0] == (3000 if name == "points" else np.load(files[name]).shape[0])
