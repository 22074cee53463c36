"""The shipped examples run and say what they should."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import linear_sum_assignment as scipy_lsa

from lapcli.generate import generate

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_pipeline_example(tmp_path):
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    result = subprocess.run(["bash", str(EXAMPLES / "pipeline.sh"), str(tmp_path)], capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr
    cost = generate(200, range_factor=100, seed=7)
    rows, cols = scipy_lsa(cost)
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["objective"] == cost[rows, cols].sum()
    assert result.stdout.split()[1] == str(report["objective"])
    lines = (tmp_path / "assignment.csv").read_text().splitlines()
    assert lines[0] == "row,col" and len(lines) == 201


def test_api_example():
    result = subprocess.run([sys.executable, str(EXAMPLES / "api_example.py")], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    cost = np.random.default_rng(0).integers(0, 1000, size=(300, 400))
    rows, cols = scipy_lsa(cost)
    assert f"scipy-style objective: {cost[rows, cols].sum()}" in result.stdout
    rows, cols = scipy_lsa(cost, maximize=True)
    assert f"maximum: {cost[rows, cols].sum()}" in result.stdout
    assert result.stdout.count("step ") == 6 or "scipy" in result.stdout
