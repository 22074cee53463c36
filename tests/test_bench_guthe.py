"""The guthe-omp bench peer (lapcli.bench.guthe): refused in one line without its library; with it
(LAPCLI_GUTHE_OMP naming a build of benchmarks/peers/build_guthe.sh), the objectives of scipy."""

import json
import os

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linear_sum_assignment

from lapcli.bench import guthe
from lapcli.bench.runner import bench_solvers, built_peer_runner, default_runners, solver_available
from lapcli.cli.main import cli
from lapcli.generate import generate

needs_library = pytest.mark.skipif(not os.environ.get(guthe.ENV),
                                   reason=f"{guthe.ENV} is not set (build with {guthe.BUILD})")


def test_without_the_variable_the_peer_is_unavailable_and_says_why(monkeypatch):
    monkeypatch.delenv(guthe.ENV, raising=False)
    assert "guthe-omp" in bench_solvers()
    assert solver_available("guthe-omp") == (False, f"{guthe.ENV} is not set (build the library with {guthe.BUILD})")
    assert callable(default_runners()["guthe-omp"])  # made without loading anything


def test_a_library_that_does_not_load_is_unavailable_in_one_line(monkeypatch, tmp_path):
    for path in (tmp_path / "missing.so", tmp_path / "not-a-library.so"):
        if path.name.startswith("not"):
            path.write_text("not ELF\n")
        monkeypatch.setenv(guthe.ENV, str(path))
        available, why = solver_available("guthe-omp")
        assert not available and why.startswith(f"{guthe.ENV}={path} cannot be loaded: ") and "\n" not in why


def test_naming_it_without_the_variable_is_bad_input(monkeypatch, tmp_path):
    """As any solver this machine lacks: exit 2, one line, no record written, nothing timed."""
    monkeypatch.delenv(guthe.ENV, raising=False)
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8", "--ranges", "1", "--solvers", "guthe-omp,scipy",
                                      "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 2, result.output
    assert f"solver 'guthe-omp' cannot run here: {guthe.ENV} is not set" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "b.json").exists()


def test_solve_refuses_what_it_cannot_take():
    with pytest.raises(TypeError, match="guthe-omp takes"):
        guthe.solve(np.zeros((3, 3), dtype=np.int16))
    with pytest.raises(ValueError, match="a matrix"):
        guthe.solve(np.zeros(3))


def scipy_objective(cost):
    rows, cols = linear_sum_assignment(cost)
    chosen = cost[rows, cols]
    return int(chosen.astype(np.int64).sum()) if cost.dtype.kind == "i" else float(chosen.astype(np.float64).sum())


def random_square(rng, n, dtype):
    if dtype.startswith("int"):
        high = 2**31 - 1 if dtype == "int32" else 10**6 * n  # int32: c - v would overflow an int solver type
        return rng.integers(0, high, (n, n)).astype(dtype)
    return rng.random((n, n)).astype(dtype)


@needs_library
@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("n", [1, 2, 7, 64, 300])
def test_random_squares_have_scipys_objective(rng, n, dtype):
    run = built_peer_runner("guthe-omp")
    for cost in (random_square(rng, n, dtype), rng.integers(0, 3, (n, n)).astype(dtype)):  # and many ties
        column_of_row = guthe.solve(cost)
        assert column_of_row.dtype == np.int32 and sorted(column_of_row) == list(range(n))
        outcome = run(cost, None)
        assert outcome.engine == "guthe-omp" and outcome.steps == []
        if dtype.startswith("int"):
            assert isinstance(outcome.objective, int) and outcome.objective == scipy_objective(cost)
        else:
            assert outcome.objective == pytest.approx(scipy_objective(cost), rel=1e-9, abs=1e-9)


@needs_library
@pytest.mark.parametrize("n", [1, 2, 7, 64, 300])
def test_squared_distance_integers_have_scipys_objective(n):
    cost = generate(n, kind="geometric-int", seed=n, dtype="int32")
    assert built_peer_runner("guthe-omp")(cost, None).objective == scipy_objective(cost)


@needs_library
def test_a_row_minimal_diagonal_is_still_solved(rng):
    """The authors' epsilon estimate is 0/0 there (a NaN epsilon, no solve): the call solves it again without."""
    for dtype in ("float64", "float32", "int32"):
        cost = random_square(rng, 40, dtype)
        cost[np.arange(40), np.arange(40)] = 0
        assert list(guthe.solve(cost)) == list(range(40))


@needs_library
@pytest.mark.parametrize("shape", [(5, 9), (40, 100), (100, 40), (9, 5)])
def test_rectangles_wide_and_tall(rng, shape):
    cost = rng.integers(0, 1000, shape).astype(np.int64)
    column_of_row = guthe.solve(np.asfortranarray(cost))  # not C-contiguous: copied
    rows = np.flatnonzero(column_of_row >= 0)
    assert len(rows) == min(shape) and len(set(column_of_row[rows])) == len(rows)
    assert int(cost[rows, column_of_row[rows]].sum()) == scipy_objective(cost)


@needs_library
def test_bench_times_it_beside_scipy(tmp_path):
    out = tmp_path / "b.json"
    result = CliRunner().invoke(cli, ["bench", "--sizes", "64", "--ranges", "1,1000", "--dtypes", "int32,int64",
                                      "--solvers", "scipy,guthe-omp", "--repeat", "1", "--warmup", "0",
                                      "--json", str(out)])
    assert result.exit_code == 0, result.output
    results = json.loads(out.read_text())["results"]
    assert {r["solver"] for r in results} == {"scipy", "guthe-omp"} and all(r["status"] == "ok" for r in results)
