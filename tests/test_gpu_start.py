"""The lap process's early CUDA start and detached teardown (lapcli/cli/gpu_start.py): which commands
start the driver before NumPy's import, the NPY header read without NumPy, the lazy package, and
the child that outlives the process only until its exit. CPU only: the child and the decisions
need no GPU (the GPU test of the whole path is in test_cuda_solver.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from lapcli.cli import gpu_start


@pytest.mark.parametrize("shape", [(4096, 4096), (7, 3), (5, 6, 7), (1,), ()])
@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_npy_shape_reads_the_header_numpy_writes(tmp_path, shape, version):
    path = tmp_path / "m.npy"
    with open(path, "wb") as file:
        np.lib.format.write_array(file, np.zeros(shape, dtype=np.int32), version=version)
    assert gpu_start.npy_shape(str(path)) == shape


def test_npy_shape_of_a_file_that_is_not_npy(tmp_path):
    (tmp_path / "m.csv").write_text("1,2\n3,4\n")
    assert gpu_start.npy_shape(str(tmp_path / "m.csv")) is None
    assert gpu_start.npy_shape(str(tmp_path / "absent.npy")) is None


@pytest.fixture
def files(tmp_path):
    made = {}
    for name, shape in {"big": (2048, 2048), "mid": (600, 600), "small": (100, 100), "wide": (100, 2048),
                        "stack": (10, 16, 16)}.items():
        made[name] = str(tmp_path / f"{name}.npy")
        with open(made[name], "wb") as file:
            np.lib.format.write_array(file, np.zeros(shape, dtype=np.int8))
    made["csv"] = str(tmp_path / "m.csv")
    open(made["csv"], "w").write("1,2\n3,4\n")
    return made


@pytest.fixture
def cupy_installed(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name == "cupy" else real(name, *a))


def test_no_early_start_without_cupy(files, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "cupy" else real(name, *a))
    assert gpu_start.likely_on_gpu(["solve", files["big"]]) is None  # auto and the CUDA engines need CuPy


def test_the_driver_starts_early_only_where_auto_or_the_solver_goes_to_the_gpu(files, cupy_installed):
    on = gpu_start.likely_on_gpu
    assert on(["solve", files["big"]]) == 0
    assert on(["solve", files["big"], "-o", "a.npy", "--quiet", "--device", "1"]) == 1
    assert on(["solve", "--device=2", files["mid"]]) == 2  # auto: the kernel from 256 on at low ranges (R decides up to 1024)
    assert on(["solve", files["stack"]]) == 0  # auto sends a stack to cuda-batch
    assert on(["solve", files["small"], "--solver", "cuda"]) == 0  # named: the kernel whatever the size
    assert on(["solve", files["small"], "--solver=cuda-sap"]) == 0  # every CUDA engine
    assert on(["solve", files["small"]]) is None  # auto: scipy below the crossover
    assert on(["solve", files["wide"]]) is None  # auto: scipy for wide k × m
    assert on(["solve", files["big"], "--solver", "scipy"]) is None
    assert on(["solve", files["big"], "--solver=lapx"]) is None
    assert on(["solve", files["csv"]]) is None  # no cheap shape
    assert on(["solve", files["big"], files["big"]]) is None  # several inputs: Dask or a loop decides
    assert on(["solve", "-o", files["small"], files["big"]]) == 0  # -o's value is not an input
    assert on(["solve", "-", "--solver", "cuda"]) is None  # stdin
    assert on(["solve", files["big"], "--help"]) is None
    assert on(["solve", files["big"], "--dask"]) is None  # Dask workers solve, each on its own GPU
    assert on(["solve", files["big"], "--scheduler", "tcp://h:8786"]) is None
    assert on(["generate", "--n", "4096"]) is None
    assert on([]) is None


def test_the_options_that_take_a_value_are_those_of_lap_solve():
    from lapcli.cli.main import solve_command

    taking = {name for p in solve_command.params if not getattr(p, "is_flag", True) and p.param_type_name == "option"
              for name in p.opts}
    assert taking == gpu_start.SOLVE_OPTIONS_WITH_VALUES


def test_a_fifo_or_an_odd_device_number_never_hangs_or_breaks_the_guess(tmp_path, cupy_installed):
    fifo = tmp_path / "m.npy"
    os.mkfifo(fifo)
    assert gpu_start.npy_shape(str(fifo)) is None  # returns at once: no open() of the pipe
    assert gpu_start.likely_on_gpu(["solve", str(fifo)]) is None
    big = tmp_path / "big.npy"
    np.save(big, np.zeros((1024, 1024), dtype=np.int8))
    assert gpu_start.likely_on_gpu(["solve", str(big), "--device", "\u00b2"]) == 0  # '²' is a digit to str.isdigit


def test_import_lapcli_imports_no_numpy_until_a_public_name_is_used():
    script = ("import sys, lapcli, lapcli.cli.gpu_start, lapcli.engines.auto\n"
              "before = 'numpy' in sys.modules\n"
              "solve = lapcli.solve\n"
              "print(before, 'numpy' in sys.modules, solve.__module__, 'solve' in dir(lapcli))")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "True", "lapcli.pipeline", "True"]
    errors = subprocess.run([sys.executable, "-c", "import lapcli; print(lapcli.errors.SolverError.__name__)"],
                            capture_output=True, text=True, check=True)
    assert errors.stdout.strip() == "SolverError"  # submodules are attributes, as before the lazy exports
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        import lapcli

        lapcli.not_a_name  # noqa: B018


DETACH = """
import os, sys, time
from lapcli.cli import gpu_start
gpu_start._default_compute_mode = lambda: True  # no driver here: take the device as shared
if sys.argv[1] == "context":
    gpu_start.note_context()
print("started", flush=True)
pid = gpu_start.detach_teardown()
print(pid, flush=True)
if pid:
    time.sleep(0.3)
    assert os.waitpid(pid, os.WNOHANG) == (0, 0), "the child must wait for this process's exit"
    print("child alive", flush=True)
    print(sorted(int(fd) for fd in os.listdir(f"/proc/{pid}/fd")), flush=True)
"""


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":  # exited, not yet reaped by its new parent
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.02)
    return False


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="lists the child's files in /proc")
def test_the_teardown_child_waits_for_the_process_then_exits_and_holds_no_pipe():
    # capture_output returns only when every holder of the pipes has closed them: the child must
    # not keep stdout or stderr open, or this call would hang until the child exits.
    result = subprocess.run([sys.executable, "-c", DETACH, "context"], capture_output=True, text=True,
                            check=True, timeout=30)
    lines = result.stdout.split("\n")
    assert lines[0] == "started" and lines[2] == "child alive", result.stdout
    assert not {0, 1, 2} & set(json.loads(lines[3])), "the child holds stdin, stdout or stderr"
    pid = int(lines[1])
    assert _gone(pid), "the teardown child outlived its parent"
    assert result.stderr == ""


@pytest.mark.parametrize("case", ["no context", "turned off"])
def test_no_teardown_child_without_a_context_or_when_turned_off(case):
    env = {**os.environ, "LAPCLI_DETACH_TEARDOWN": "0" if case == "turned off" else "1"}
    result = subprocess.run([sys.executable, "-c", DETACH, "context" if case == "turned off" else "none"],
                            capture_output=True, text=True, check=True, env=env, timeout=30)
    assert result.stdout.split("\n")[:2] == ["started", "None"]


def test_the_lap_entry_runs_the_command_and_keeps_its_exit_code(tmp_path):
    np.save(tmp_path / "m.npy", np.array([[4, 1], [2, 8]], dtype=np.int32))
    ok = subprocess.run([sys.executable, "-m", "lapcli", "solve", str(tmp_path / "m.npy"), "-o", "-", "--quiet"],
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stdout.split() == ["row,col", "0,1", "1,0"], ok
    bad = subprocess.run([sys.executable, "-m", "lapcli", "solve", str(tmp_path / "absent.npy")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1, bad
