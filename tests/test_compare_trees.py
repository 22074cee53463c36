"""benchmarks/compare_trees.py's verdict, on made-up records: a cell the base timed and the head
did not (an error, a time-out, a missing record) fails the comparison, as a slower one does."""

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "compare_trees.py"


@pytest.fixture
def compare():
    spec = importlib.util.spec_from_file_location("compare_trees", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def verdict(compare, monkeypatch, tmp_path, base: dict, head: dict) -> int:
    monkeypatch.setattr(compare, "run_suite", lambda tree, suite, repeat, out: dict(head if "head" in out.name else base))
    monkeypatch.setattr(sys, "argv", ["compare_trees.py", "--base", "b", "--head", "h", "--out", str(tmp_path),
                                      "--suites", "quick", "--limit", "0.5"])
    return compare.main()


def test_a_cell_the_head_lost_fails_as_a_slower_one_does(compare, monkeypatch, tmp_path, capsys):
    base = {("64",): 1.0, ("128",): 2.0}
    assert verdict(compare, monkeypatch, tmp_path, base, {("64",): 1.1, ("128",): 2.1}) == 0
    assert verdict(compare, monkeypatch, tmp_path, base, {("64",): 1.1, ("128",): 4.0}) == 1
    assert verdict(compare, monkeypatch, tmp_path, base, {("64",): 1.1, ("128",): None}) == 1  # an error there
    assert "BROKEN" in capsys.readouterr().out
    assert verdict(compare, monkeypatch, tmp_path, base, {}) == 1  # no record at all
    assert verdict(compare, monkeypatch, tmp_path, {("64",): None}, {}) == 0  # nothing the base timed
