"""`lap bench --suite batch` on the CPU: the runners on tiny stacks, the objective check, the table."""

import json
import subprocess
import sys
import types

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli.bench.batch as bench_batch
import lapcli.errors
from lapcli.bench.batch import (
    BatchMismatch,
    BatchRunner,
    BatchSettings,
    BatchTiming,
    batch_runners,
    batch_table_rows,
    cell_stack,
    run_batch_bench,
    time_runner,
)
from lapcli.cli.main import cli

TINY = ((6, 5), (3, 12))  # (B, n) cells that run in milliseconds


def loop_objectives(stack):
    return np.array([stack[b][scipy_lsa(stack[b])].astype(np.float64).sum() for b in range(len(stack))])


def test_the_cell_stacks_are_the_issues_float32_kinds():
    settings = BatchSettings(seed=4)
    ints = cell_stack(settings, 50, 16, "int")
    assert ints.shape == (50, 16, 16) and ints.dtype == np.float32
    assert (ints == np.round(ints)).all() and ints.min() >= 0 and ints.max() < 160 and ints.max() > 140
    floats = cell_stack(settings, 50, 16, "float")
    assert floats.dtype == np.float32 and 0 <= floats.min() and floats.max() <= 1 and (floats != np.round(floats)).any()
    assert np.array_equal(cell_stack(settings, 50, 16, "int"), ints)  # every runner gets the same stack


def test_every_runner_available_here_solves_tiny_stacks_like_a_scipy_loop(rng):
    settings = BatchSettings(repeat=2, warmup=1)
    available = [r for r in batch_runners().values() if r.available()[0]]
    assert {"scipy-batch", "scipy-loop"} <= {r.name for r in available}
    for stack in (cell_stack(settings, 7, 9, "int"), cell_stack(settings, 7, 9, "float")):
        expected = loop_objectives(stack)
        for runner in available:
            timing = BatchTiming(7, 9, "x", runner.name, "ok")
            col_ind = time_runner(runner, stack, settings, timing)
            assert timing.status == "ok" and len(timing.times_ms) == 2, timing.message
            assert bench_batch.assignment_problem(col_ind, stack.shape) is None
            np.testing.assert_allclose(bench_batch.stack_objectives(stack, col_ind), expected, rtol=1e-6)


def test_the_sweep_checks_every_problem_and_names_the_first_that_differs():
    runners = batch_runners()
    honest = runners["scipy-loop"]

    def worse(stack):  # a valid assignment, but problem 1 is not optimal: rows 0 and 1 swapped
        col_ind = honest.solve(stack).copy()
        col_ind[1, [0, 1]] = col_ind[1, [1, 0]]
        return col_ind

    runners["liar"] = BatchRunner("liar", honest.available, honest.setup, worse, honest.to_host)
    runners["broken"] = BatchRunner("broken", honest.available, honest.setup,
                                    lambda stack: np.zeros(stack.shape[:2], dtype=np.int64), honest.to_host)
    settings = BatchSettings(cells=((4, 6),), kinds=("int",), runners=("scipy-loop", "liar", "broken"), repeat=1, warmup=0)
    with pytest.raises(BatchMismatch, match=r"problem 1: scipy-loop found .*, liar found") as caught:
        run_batch_bench(settings, runners)
    statuses = {t.runner: t.status for t in caught.value.results}
    assert statuses == {"scipy-loop": "ok", "liar": "mismatch", "broken": "invalid"}
    # ties: another optimal assignment is no mismatch
    settings.runners = ("scipy-loop", "scipy-batch")
    assert all(t.status == "ok" for t in run_batch_bench(settings, runners))


def test_a_wrong_first_runner_is_the_one_marked_not_every_right_one():
    """The runners that agree name the wrong one, wherever it stands: the first runner's objectives
    were the reference, so a wrong lapcli engine (first on a GPU machine) marked torch-la, lapx and
    scipy "mismatch" and itself ok."""
    runners = batch_runners()
    honest = runners["scipy-loop"]

    def worse(stack):
        col_ind = honest.solve(stack).copy()
        col_ind[:, [0, 1]] = col_ind[:, [1, 0]]
        return col_ind

    runners["liar"] = BatchRunner("liar", honest.available, honest.setup, worse, honest.to_host)
    settings = BatchSettings(cells=((4, 6),), kinds=("int",), runners=("liar", "scipy-batch", "scipy-loop"), repeat=1,
                             warmup=0)
    with pytest.raises(BatchMismatch, match=r"problem \d: scipy-batch found .*, liar found") as caught:
        run_batch_bench(settings, runners)
    statuses = {t.runner: t.status for t in caught.value.results}
    assert statuses == {"liar": "mismatch", "scipy-batch": "ok", "scipy-loop": "ok"}


def test_speedups_are_over_torch_in_the_same_setting_else_over_the_scipy_loop():
    def timing(runner, ms):
        return BatchTiming(10, 16, "int", runner, "ok", [ms])

    with_torch = [timing("cuda-batch", 2.0), timing("cuda-batch:d2d", 1.0), timing("torch-la", 8.0),
                  timing("torch-la:d2d", 5.0), timing("scipy-loop", 100.0)]
    row = batch_table_rows(with_torch, ("cuda-batch", "cuda-batch:d2d", "torch-la", "torch-la:d2d", "scipy-loop"))[0]
    assert row == ["10", "16", "int", "2.00 (4.00×)", "1.00 (5.00×)", "8.00", "5.00", "100.00 (0.08×)"]
    without = [timing("scipy-batch", 20.0), timing("scipy-loop", 100.0)]
    assert batch_table_rows(without, ("scipy-batch", "scipy-loop"))[0][3:] == ["20.00 (5.00×)", "100.00"]
    # below 1 ms three significant digits: a time printed 0.01 beside a speedup of 3.41× hid its value
    small = [timing("scipy-batch", 0.00293), timing("scipy-loop", 0.01)]
    assert batch_table_rows(small, ("scipy-batch", "scipy-loop"))[0][3:] == ["0.00293 (3.41×)", "0.01"]


def test_lapx_batch_adapter_reads_lapjvx_batchs_lists(monkeypatch):
    def lapjvx_batch(costs, extend_cost=False, cost_limit=np.inf, return_cost=True, n_threads=0):
        rows, cols = zip(*(scipy_lsa(c) for c in costs))
        return loop_objectives(costs), list(rows), list(cols)

    from lapcli.engines.cpu import lapx as lapx_engine

    fake = types.SimpleNamespace(lapjvx_batch=lapjvx_batch, __version__="0.9")
    monkeypatch.setattr(lapx_engine, "lapx_module", lambda: fake)
    runner = batch_runners()["lapx-batch"]
    assert runner.available()[0]
    stack = cell_stack(BatchSettings(), 5, 8, "float")
    col_ind = runner.to_host(runner.solve(runner.setup(stack)))
    np.testing.assert_allclose(bench_batch.stack_objectives(stack, col_ind), loop_objectives(stack))
    monkeypatch.setattr(lapx_engine, "lapx_module", lambda: types.SimpleNamespace(__version__="0.6"))
    assert batch_runners()["lapx-batch"].available() == (False, "lapx 0.6 has no lapjvx_batch (lapx >= 0.8)")


def test_lapx_batch_runner_runs_the_installed_lapx():
    pytest.importorskip("lap", reason="needs lapx: pip install 'lapcli[lapx]' (the module 'lap' is not installed)")
    runner = batch_runners()["lapx-batch"]
    available, why = runner.available()
    if not available:
        pytest.skip(why)
    stack = cell_stack(BatchSettings(), 6, 9, "int")
    col_ind = runner.to_host(runner.solve(runner.setup(stack)))
    np.testing.assert_allclose(bench_batch.stack_objectives(stack, col_ind), loop_objectives(stack))


def test_batch_suite_through_the_cli_writes_json_and_skips_what_cannot_run(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_batch, "BATCH_CELLS", TINY)
    monkeypatch.setattr(bench_batch, "SUITE_MIN_SECONDS", 0.01)
    result = CliRunner().invoke(cli, ["bench", "--suite", "batch", "--repeat", "2", "--warmup", "0",
                                      "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "b.json").read_text())
    ran = [name for name, runner in batch_runners().items() if runner.available()[0]]
    assert payload["settings"]["runners"] == ran and set(payload["skipped"]) == set(batch_runners()) - set(ran)
    assert len(payload["results"]) == len(TINY) * 2 * len(ran)  # cells × kinds × runners
    assert payload["settings"]["min_seconds"] == 0.01 and payload["settings"]["suite"] == "batch"
    assert all(r["status"] == "ok" and r["median_ms"] for r in payload["results"])
    assert all(len(r["times_ms"]) >= 2 and (sum(r["times_ms"]) >= 10 or len(r["times_ms"]) == bench_batch.MAX_REPEAT)
               for r in payload["results"])
    assert "median ms per batch" in result.stderr and "×" in result.stderr
    for name in payload["skipped"]:
        assert f"skipped {name}" in result.stderr


def test_batch_suite_scale_shrinks_the_batches_and_a_liar_exits_1(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_batch, "BATCH_CELLS", ((100, 4), (10, 8)))
    original = bench_batch.batch_runners

    def lying():
        runners = original()
        honest = runners["scipy-batch"]
        runners["scipy-batch"] = BatchRunner("scipy-batch", honest.available, honest.setup,
                                             lambda stack: np.roll(honest.solve(stack), 1, axis=1), honest.to_host)
        return runners

    result = CliRunner().invoke(cli, ["bench", "--suite", "batch", "--scale", "0.1", "--solvers", "scipy-loop",
                                      "--repeat", "1", "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "b.json").read_text())
    assert payload["settings"]["cells"] == [[10, 4], [1, 8]]  # B scaled (at least one problem), n kept
    assert sorted({(r["batch"], r["n"]) for r in payload["results"]}) == [(1, 8), (10, 4)]
    monkeypatch.setattr(bench_batch, "batch_runners", lying)
    result = CliRunner().invoke(cli, ["bench", "--suite", "batch", "--solvers", "scipy-loop,scipy-batch", "--repeat", "1"])
    assert result.exit_code == 1 and "objectives disagree" in result.stderr


def test_a_batch_runner_that_fails_is_one_line_exit_1_and_one_named_that_cannot_run_exit_2(monkeypatch):
    """A failing runner's cell reads error and the run ends in one line, exit 1 (a traceback once:
    the line read a single solve's fields); a runner named that cannot run here is exit 2, as a
    --solver this machine cannot run, not skipped under -q."""
    monkeypatch.setattr(bench_batch, "BATCH_CELLS", TINY)
    monkeypatch.setattr(bench_batch, "SUITE_MIN_SECONDS", 0.01)
    original = bench_batch.batch_runners

    def failing():
        runners = original()
        honest = runners["scipy-batch"]

        def broken(stack):
            raise lapcli.errors.SolverError("the engine stopped")

        runners["scipy-batch"] = BatchRunner("scipy-batch", honest.available, honest.setup, broken, honest.to_host)
        runners["nowhere"] = BatchRunner("nowhere", lambda: (False, "no such device"), honest.setup, broken,
                                         honest.to_host)
        return runners

    monkeypatch.setattr(bench_batch, "batch_runners", failing)
    result = CliRunner().invoke(cli, ["bench", "--suite", "batch", "--solvers", "scipy-loop,scipy-batch",
                                      "--repeat", "1", "--warmup", "0"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines()[-1].startswith("Error: ") and "scipy-batch B=" in result.stderr
    result = CliRunner().invoke(cli, ["bench", "--suite", "batch", "--solvers", "scipy-loop,nowhere", "-q"])
    assert result.exit_code == 2 and "batch runner 'nowhere' cannot run here: no such device" in result.stderr
    result = CliRunner().invoke(cli, ["bench", "--suite", "batch", "--repeat", "1", "--warmup", "0", "-q"])
    assert result.exit_code == 1  # by default what cannot run is skipped; scipy-batch still fails


@pytest.mark.parametrize("args, fragment", [
    (["--suite", "batch", "--sizes", "16"], "drop --sizes"),
    (["--suite", "batch", "--kind", "float"], "drop --kind"),
    (["--suite", "batch", "--csv", "x.csv"], "drop --csv"),
    (["--suite", "batch", "--solvers", "cuda"], "unknown batch runner 'cuda'"),
    (["--suite", "quick", "--scale", "0.5"], "--scale applies to --suite batch only"),
])
def test_batch_suite_options_are_checked_before_work(args, fragment):
    result = CliRunner().invoke(cli, ["bench", *args])
    assert result.exit_code == 2 and fragment in result.stderr


def test_fast_cells_are_timed_until_their_solves_fill_min_seconds(monkeypatch):
    """A sub-millisecond runner gets many more than ``repeat`` samples (its median is then stable),
    never more than MAX_REPEAT; a slow one stops at ``repeat``."""
    stack = cell_stack(BatchSettings(), 3, 4, "int")
    honest = batch_runners()["scipy-loop"]
    clock = {"now": 0.0}
    monkeypatch.setattr(bench_batch.time, "perf_counter", lambda: clock["now"])

    def runner_taking(ms):
        def solve(prepared):
            clock["now"] += ms / 1e3
            return honest.solve(prepared)
        return BatchRunner(f"{ms} ms", honest.available, honest.setup, solve, honest.to_host)

    settings = BatchSettings(repeat=5, warmup=0, min_seconds=0.2)
    for ms, expected in ((1.0, 200), (50.0, 5), (0.01, bench_batch.MAX_REPEAT)):
        timing = BatchTiming(3, 4, "int", "x", "ok")
        time_runner(runner_taking(ms), stack, settings, timing)
        assert len(timing.times_ms) == expected, (ms, len(timing.times_ms))


def test_the_batch_record_says_whether_the_solves_were_warm(tmp_path):
    from lapcli.bench.batch import BatchSettings, write_batch_json

    for warmup, words in ((2, ", warm,"), (0, ", no warm-up,")):
        write_batch_json(str(tmp_path / "b.json"), BatchSettings(warmup=warmup), [], {}, {})
        assert words in json.loads((tmp_path / "b.json").read_text())["timing"]


@pytest.mark.parametrize("runner", ["scipy-loop", "scipy-batch"])
def test_a_runners_setup_imports_what_its_timed_solve_needs(runner):
    """With --warmup 0 the first timed solve imported scipy.optimize (~0.3 s), and at the suite's
    0.2 s minimum it was the only sample: 368 ms for a B=10, n=16 cell that solves in 0.2 ms."""
    code = ("import sys, numpy as np\n"
            "from lapcli.bench.batch_runners import batch_runners\n"
            f"batch_runners()[{runner!r}].setup(np.zeros((2, 3, 3), np.float32))\n"
            "print('scipy.optimize' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "True"
