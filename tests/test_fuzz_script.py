"""The GPU fuzzer's checker, exercised on the CPU with the NumPy solver (the GPU run uses cuda)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "fuzz_gpu.py"


def load_fuzz_module():
    spec = importlib.util.spec_from_file_location("fuzz_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fuzz_run_on_cpu_counts_and_agrees(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--solver", "numpy", "--seconds", "4", "--max-n", "40",
                             "--seed", "3", "--out", str(tmp_path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["solves"] >= 20 and summary["ok"] == summary["solves"]
    assert summary["mismatch"] == summary["error"] == summary["hang"] == 0


def test_checker_flags_a_wrong_objective(monkeypatch):
    fuzz = load_fuzz_module()
    case = {"n": 6, "m": 6, "kind": "uniform", "range": 10.0, "dtype": "int64", "maximize": False,
            "forbidden": 0.0, "seed": 5}
    cost = fuzz.build_matrix(case)
    assert fuzz.check(case, cost, "numpy") == ("ok", "")
    real_solve = fuzz.lapcli.solve

    def off_by_one(*args, **kwargs):
        solution = real_solve(*args, **kwargs)
        solution.objective += 1
        return solution

    monkeypatch.setattr(fuzz.lapcli, "solve", off_by_one)
    verdict, detail = fuzz.check(case, cost, "numpy")
    assert verdict == "mismatch" and "scipy" in detail


def test_checker_agrees_on_infeasibility():
    fuzz = load_fuzz_module()
    case = {"n": 4, "m": 4, "kind": "uniform", "range": 10.0, "dtype": "float64", "maximize": False,
            "forbidden": 0.0, "seed": 1}
    cost = np.ones((4, 4))
    cost[2] = np.inf
    assert fuzz.check(case, cost, "numpy") == ("ok", "")


def test_batch_checker_sums_the_reference_exactly(monkeypatch):
    """A case the GPU fuzzer flagged: 53 problems of 1e6 + U(0, 1e-7), maximised. lapcli's
    objectives are correctly rounded (fsum); NumPy's plain sum of scipy's pairs errs by 2.2e-8 on
    problem 3, more than the tolerance (2.1e-8): the checker must sum its reference exactly too."""
    import types

    fuzz = load_fuzz_module()
    case = {"n": 47, "m": 47, "kind": "offset", "range": 100.0, "dtype": "float64", "maximize": True,
            "forbidden": 0.0, "seed": 236563105}
    monkeypatch.setattr(fuzz, "draw_case", lambda rng, max_n: dict(case))
    rng = types.SimpleNamespace(integers=lambda low, high: 53, random=lambda: 0.9)  # 0.9: a stack, not a ragged list
    _, stack, verdicts = fuzz.check_batch(rng, "scipy-batch")
    assert stack.shape == (53, 47, 47) and verdicts == ["ok"] * 53
