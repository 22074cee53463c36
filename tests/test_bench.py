"""`lap bench` on the CPU: the quick suite, its outputs, and the loud objective check."""

import csv
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from lapcli.bench.runner import default_runners, run_bench, solver_available
from lapcli.bench.suites import SUITES, BenchSettings, ObjectiveMismatch
from lapcli.cli.main import cli


def test_quick_suite_writes_json_and_csv_with_every_repeat(tmp_path):
    result = CliRunner().invoke(cli, ["bench", "--suite", "quick", "--solvers", "numpy,scipy", "--repeat", "2",
                                      "--warmup", "0", "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv")])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "b.json").read_text())
    assert payload["settings"]["solvers"] == ["numpy", "scipy"]
    assert {"numpy", "scipy", "device", "date"} <= set(payload["environment"])
    from importlib import metadata

    try:  # lapx's version under its own name (its module is named lap), where it is installed
        lapx = metadata.version("lapx")
    except metadata.PackageNotFoundError:
        lapx = None
    assert payload["environment"].get("lapx") == lapx and "lap" not in payload["environment"]
    results = payload["results"]
    assert len(results) == 3 * 3 * 2  # sizes × ranges × solvers
    assert all(r["status"] == "ok" and len(r["times_ms"]) == 2 for r in results)
    numpy_rows = [r for r in results if r["solver"] == "numpy"]
    assert all([s["step"] for s in r["steps"]] == [1, 2, 3, 4, 5, 6] for r in numpy_rows)
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    assert len(rows) == len(results) * 2
    assert "median ms" in result.stderr and "×" in result.stderr


def test_a_bench_written_to_a_log_says_each_finished_solve_and_its_time():
    """Not on a terminal (a log, a pipe) the live line is not drawn: each finished solve gets a
    line with its wall time, so that a sweep stopped by a time limit shows how far it got."""
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8,16", "--ranges", "1", "--solvers", "scipy,numpy",
                                      "--repeat", "1", "--warmup", "0"])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("n=")]
    assert [line.split(":")[0] for line in lines] == ["n=8 R=1.0 int32 scipy", "n=8 R=1.0 int32 numpy",
                                                      "n=16 R=1.0 int32 scipy", "n=16 R=1.0 int32 numpy"]
    assert all(re.search(r": ok, median [0-9.]+ ms, [0-9.]+ s in all$", line) for line in lines), lines


def test_quiet_bench_prints_nothing_and_still_writes_its_record(tmp_path):
    out = tmp_path / "b.json"
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8", "--ranges", "1", "--solvers", "scipy,numpy", "--repeat", "1",
                                      "--quiet", "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert result.output == ""
    assert {row["n"] for row in json.loads(out.read_text())["results"]} == {8}


def test_a_wrong_solver_is_a_loud_failure(tmp_path):
    runners = default_runners()
    honest = runners["scipy"]
    runners["numpy"] = lambda cost, timeout: (honest(cost, timeout)[0] + 1, [])  # off by one
    settings = BenchSettings(cells=((20, 10),), solvers=("scipy", "numpy"), repeat=1, warmup=0)
    with pytest.raises(ObjectiveMismatch, match="scipy found .* numpy found"):
        run_bench(settings, runners=runners)


def test_mismatch_through_the_cli_exits_1(monkeypatch):
    import lapcli.bench.runner as bench

    original = bench.default_runners

    def lying_runners():
        runners = original()
        runners["numpy"] = lambda cost, timeout: (-1, [])
        return runners

    monkeypatch.setattr(bench, "default_runners", lying_runners)
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8", "--ranges", "1", "--solvers", "scipy,numpy", "--repeat", "1"])
    assert result.exit_code == 1 and "objectives disagree" in result.stderr


def test_a_mismatch_beside_a_failed_solve_names_both_and_its_row_says_why(monkeypatch, tmp_path):
    """The exit line named the disagreement alone (the failure was in the table only), and a mismatch
    row's CSV message was empty."""
    import lapcli.bench.runner as bench

    original = bench.default_runners

    def runners():
        made = original()
        honest = made["scipy"]

        def numpy(cost, timeout):
            if cost.shape[0] == 8:
                raise RuntimeError("boom")
            return (honest(cost, timeout)[0] + 1, [])

        made["numpy"] = numpy
        return made

    monkeypatch.setattr(bench, "default_runners", runners)
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8,12", "--ranges", "1", "--solvers", "scipy,numpy",
                                      "--repeat", "1", "--warmup", "0", "-q", "--csv", str(tmp_path / "b.csv")])
    assert result.exit_code == 1
    assert "objectives disagree: n=12" in result.stderr and "1 solve(s) failed: numpy n=8" in result.stderr
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    mismatch = next(row for row in rows if row["status"] == "mismatch")
    assert mismatch["n"] == "12" and "scipy found" in mismatch["message"]


def test_the_solver_the_others_agree_with_is_the_reference():
    """Each solver was measured against the first: a wrong first solver marked every right one
    "mismatch" (their times gone from the table) and kept its own. The majority decides now."""
    runners = default_runners()
    runners["scipy"] = lambda cost, timeout: (-1, [])
    settings = BenchSettings(cells=((8, 1),), solvers=("scipy", "numpy", "lapx-free"), repeat=1, warmup=0)
    runners["lapx-free"] = runners["numpy"]
    with pytest.raises(ObjectiveMismatch, match="numpy found .* scipy found -1") as raised:
        run_bench(settings, runners=runners)
    assert {r.solver: r.status for r in raised.value.results} == {"scipy": "mismatch", "numpy": "ok", "lapx-free": "ok"}


def test_a_failed_solve_through_the_cli_exits_1(monkeypatch):
    """A solver that raises was a cell marked "error" and exit 0; lap solve's contract is exit 1."""
    import lapcli.bench.runner as bench

    original = bench.default_runners

    def failing_runners():
        runners = original()
        runners["numpy"] = lambda cost, timeout: (_ for _ in ()).throw(RuntimeError("broken on purpose"))
        return runners

    monkeypatch.setattr(bench, "default_runners", failing_runners)
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8", "--ranges", "1", "--solvers", "scipy,numpy", "--repeat", "1"])
    assert result.exit_code == 1 and "1 solve(s) failed: numpy n=8" in result.stderr and "broken on purpose" in result.stderr


def test_slow_solver_is_skipped_for_larger_sizes():
    runners = default_runners()
    runners["numpy"] = lambda cost, timeout: (_ for _ in ()).throw(__import__("lapcli").SolverError("exceeded its time limit"))
    settings = BenchSettings(cells=((8, 1), (16, 1), (32, 1)), solvers=("scipy", "numpy"), repeat=1, warmup=0, timeout=1)
    statuses = [(r.n, r.status) for r in run_bench(settings, runners=runners) if r.solver == "numpy"]
    assert statuses == [(8, "timeout"), (16, "skipped"), (32, "skipped")]


def test_a_warm_up_has_room_for_one_off_costs_and_the_timed_solves_the_limit():
    """The warm-up solve may take WARMUP_LIMIT_TIMES the limit (a first solve compiles kernels);
    the timed ones get the limit itself."""
    from lapcli.bench.runner import WARMUP_LIMIT_TIMES

    limits = []
    runners = {"scipy": lambda cost, timeout: limits.append(timeout) or (0, [])}
    settings = BenchSettings(cells=((8, 1),), solvers=("scipy",), repeat=2, warmup=1, timeout=3)
    run_bench(settings, runners=runners)
    assert limits == [3 * WARMUP_LIMIT_TIMES, 3, 3] and WARMUP_LIMIT_TIMES > 1
    limits.clear()
    run_bench(BenchSettings(cells=((8, 1),), solvers=("scipy",), repeat=1, warmup=1), runners=runners)
    assert limits == [None, None]


def test_a_runner_that_compiles_nothing_gets_no_warm_up():
    """A built peer (guthe-omp: tens of seconds a solve at 32,768) is timed without a warm-up."""
    from lapcli.bench.runner import built_peer_runner

    assert built_peer_runner("guthe-omp").needs_warmup is False
    calls = []

    def cold(cost, timeout):
        calls.append(timeout)
        return 0, []

    cold.needs_warmup = False
    run_bench(BenchSettings(cells=((8, 1),), solvers=("cold",), repeat=2, warmup=1, timeout=3), runners={"cold": cold})
    assert calls == [3, 3]


def test_an_engine_is_skipped_above_its_column_limit(monkeypatch):
    from lapcli.engines import registry

    engine = registry.get("cuda-sap")
    narrow = type(engine)(engine.name, engine.summary, engine.module,
                          type(engine.capabilities)(device="cpu", max_columns=12), engine.probe)
    monkeypatch.setitem(registry.ENGINES, "cuda-sap", narrow)
    solved = []
    runners = {"cuda-sap": lambda cost, timeout: solved.append(cost.shape[0]) or (0, [])}
    settings = BenchSettings(cells=((8, 1), (16, 1)), solvers=("cuda-sap",), repeat=1, warmup=0)
    statuses = [(r.n, r.status, r.message) for r in run_bench(settings, runners=runners)]
    assert statuses == [(8, "ok", ""), (16, "skipped", "cuda-sap takes at most 12 columns")]
    assert solved == [8]


def test_bad_bench_options_are_exit_2():
    runner = CliRunner()
    assert runner.invoke(cli, ["bench", "--ranges", "5000"]).exit_code == 2
    assert runner.invoke(cli, ["bench", "--solvers", "nope"]).exit_code == 2
    assert runner.invoke(cli, ["bench", "--sizes", "a,b"]).exit_code == 2
    for name, words in (("nope", "unknown solver 'nope'"), ("sorted", "'sorted' solves no single matrix"),
                        ("scipy-batch", "'scipy-batch' solves no single matrix")):  # engines of point sets, of stacks
        result = runner.invoke(cli, ["bench", "--solvers", name, "--sizes", "8"])
        assert result.exit_code == 2 and words in result.stderr, result.stderr


def test_the_table_s_note_names_the_kinds_whose_values_do_not_follow_r():
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8", "--kind", "geometric-int", "--solvers", "scipy",
                                      "--repeat", "1"])
    assert result.exit_code == 0 and "R —: the kind's values do not depend on R" in result.stderr


def test_same_matrix_for_every_solver_in_a_cell():
    seen = {}

    def recorder(name):
        def run(cost, timeout):
            seen.setdefault(name, []).append(cost.copy())
            return 0, []
        return run

    runners = {"a": recorder("a"), "b": recorder("b")}
    run_bench(BenchSettings(cells=((10, 1),), solvers=("a", "b"), repeat=1, warmup=0), runners=runners)
    assert np.array_equal(seen["a"][0], seen["b"][0])


def test_papers_suite_is_kawtikwars_grid_and_hylac_the_issues_points():
    (papers,), (hylac,) = SUITES["papers"], SUITES["hylac"]  # one group each, taking --kind and --dtypes
    assert len(papers.cells) == 6 * 7
    assert {n for n, _ in papers.cells} == {256, 512, 1024, 2048, 4096, 8192}
    assert hylac.cells == ((1024, 1), (4096, 1), (4096, 100), (8192, 10), (8192, 1000))


def test_float_kind_is_benchmarked_in_float64_not_on_zeros(tmp_path):
    result = CliRunner().invoke(cli, ["bench", "--kind", "float", "--sizes", "6", "--ranges", "1", "--solvers",
                                      "numpy,scipy", "--repeat", "1", "--warmup", "0", "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "b.json").read_text())["results"]
    assert {r["dtype"] for r in results} == {"float64"}
    assert all(r["objective"] > 0 for r in results)  # uniform [0, 1) floats: an all-zero matrix would give 0
    assert BenchSettings(cells=((6, 1),), solvers=("scipy",), kind="geometric").dtypes == ("float64",)


def test_integer_dtype_with_a_float_kind_is_exit_2_before_any_work(tmp_path):
    result = CliRunner().invoke(cli, ["bench", "--kind", "sanity", "--dtypes", "float64,int32", "--sizes", "6",
                                      "--solvers", "scipy", "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 2 and "int32 would truncate them" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "b.json").exists()


@pytest.mark.parametrize("option, value, fragment", [
    ("--sizes", "0", "at least 1, got 0"),
    ("--sizes", "-3", "at least 1, got -3"),
    ("--sizes", ",", "at least one value"),
    ("--solvers", ",", "at least one value"),
    ("--ranges", ",", "at least one value"),
    ("--dtypes", ",", "at least one value"),
    ("--ranges", "nan", "finite"),
    ("--ranges", "1,inf", "finite"),
    ("--solvers", "scipy,scipy", "'scipy' is named more than once"),  # the table showed one run twice
    ("--sizes", "4,4", "4 is named more than once"),
    ("--timeout", "nan", "not a finite number"),
    ("--timeout", "inf", "not a finite number"),
])
def test_every_bench_option_is_checked_before_work(tmp_path, option, value, fragment):
    args = {"--sizes": "4", "--solvers": "scipy", "--repeat": "1", "--warmup": "0", option: value}
    result = CliRunner().invoke(cli, ["bench", *[x for kv in args.items() for x in kv], "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and option in lines[0], result.stderr
    assert not (tmp_path / "b.json").exists()


def test_a_size_no_machine_can_draw_is_skipped_or_refused_alike_everywhere(tmp_path):
    """A cell too large to draw once ended in a traceback from inside the runner, after the smaller
    cells ran. Whether one block of its rows fits depends on the machine (4,000,000 columns: 76 GiB
    a block, which fits a 126 GiB machine); the whole cell fits none: it is skipped beside others and
    refused alone, one line and exit 2, nothing written, on every machine."""
    result = CliRunner().invoke(cli, ["bench", "--sizes", "4000000", "--solvers", "scipy", "--repeat", "1",
                                      "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "the n=4000000 cell holds its 4000000×4000000" in lines[0], result.stderr
    assert result.stdout == "" and not (tmp_path / "b.json").exists()
    beside = CliRunner().invoke(cli, ["bench", "--sizes", "8,4000000", "--ranges", "1", "--solvers", "scipy",
                                      "--repeat", "1", "--json", str(tmp_path / "b.json")])
    assert beside.exit_code == 0, beside.output
    statuses = [(r["n"], r["status"]) for r in json.loads((tmp_path / "b.json").read_text())["results"]]
    assert statuses == [(8, "ok"), (4000000, "skipped")]


def test_the_peers_are_timed_as_direct_library_calls(monkeypatch, rng):
    """scipy and lapx run as their users call them, not through lapcli.solve (whose checks and
    objective would be charged to the peer); their objectives are still exact."""
    import lapcli.pipeline
    from scipy.optimize import linear_sum_assignment

    def no_lapcli(*args, **kwargs):
        raise AssertionError("a peer went through lapcli.solve")

    monkeypatch.setattr(lapcli.pipeline, "solve", no_lapcli)
    runners = default_runners()
    for cost in (rng.integers(0, 1000, (40, 40)).astype(np.int32), rng.random((30, 30)).astype(np.float32),
                 rng.random((20, 35))):
        rows, cols = linear_sum_assignment(cost)
        expected = cost[rows, cols].astype(np.float64).sum()
        for name in ("scipy", "lapx"):
            if name == "lapx" and not solver_available("lapx")[0]:
                continue
            outcome = runners[name](cost, None)
            assert outcome.engine == name and outcome.steps == []
            assert outcome.objective == pytest.approx(expected, rel=1e-12)
            if cost.dtype.kind == "i":
                assert isinstance(outcome.objective, int) and outcome.objective == int(expected)


def test_the_table_title_names_the_cpu_when_there_is_no_gpu(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy":
            raise ModuleNotFoundError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8", "--ranges", "1", "--solvers", "scipy", "--repeat", "1"])
    assert result.exit_code == 0, result.output
    assert " on cpu: " in result.output and "none (" not in result.output


def test_hints_keep_their_brackets_on_stderr(tmp_path):
    """Rich markup would eat "[cuda13]" from "pip install 'lapcli[cuda13]'" in the reason line."""
    from lapcli.report import render_summary
    from lapcli.results import SolveReport
    from rich.console import Console

    console = Console(file=__import__("io").StringIO(), width=200)
    report = SolveReport(objective=0, n_rows=1, n_cols=1, maximize=False, solver="scipy", device="cpu", dtype="int64",
                         total_ms=1.0, steps=[], version="x", reason="auto: pip install 'lapcli[cuda13]' or 'lapcli[cuda12]'",
                         certificate={"why": "engine [x] gives no duals"})
    render_summary(report, console)
    text = console.file.getvalue()
    assert "lapcli[cuda13]" in text and "lapcli[cuda12]" in text and "[x]" in text


def test_solving_with_a_solver_this_machine_lacks_is_bad_input(monkeypatch, tmp_path):
    """`lap solve --solver X` where X cannot run here: exit 2 and one line, as `lap bench`, no output file."""
    import dataclasses

    import numpy as np

    from lapcli.engines import registry

    lapx = registry.ENGINES["lapx"]
    monkeypatch.setitem(registry.ENGINES, "lapx", dataclasses.replace(lapx, probe=lambda: (False, "lapx is not installed")))
    np.save(tmp_path / "m.npy", np.arange(16).reshape(4, 4))
    result = CliRunner().invoke(cli, ["solve", str(tmp_path / "m.npy"), "--solver", "lapx", "-o", str(tmp_path / "a.npy")])
    assert result.exit_code == 2 and "solver 'lapx' cannot run here: lapx is not installed" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "a.npy").exists()


def test_naming_a_solver_this_machine_lacks_is_bad_input(monkeypatch, tmp_path):
    from lapcli.bench import runner

    monkeypatch.setattr(runner, "solver_available", lambda name: (name != "lapx", "lapx is not installed"))
    monkeypatch.setattr("lapcli.cli.bench.solver_available", runner.solver_available)
    result = CliRunner().invoke(cli, ["bench", "--sizes", "8", "--ranges", "1", "--solvers", "scipy,lapx",
                                      "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 2 and "solver 'lapx' cannot run here: lapx is not installed" in result.stderr
    assert not (tmp_path / "b.json").exists()


def test_between_two_disagreeing_solvers_scipy_is_the_reference():
    """Two solvers, two objectives: no majority; the first listed had been taken, so a wrong one
    listed first kept its time and marked scipy "mismatch"."""
    runners = default_runners()
    runners["wrong"] = lambda cost, timeout: (runners["scipy"](cost, timeout)[0] + 1, [])
    settings = BenchSettings(cells=((8, 1),), solvers=("wrong", "scipy"), repeat=1, warmup=0)
    with pytest.raises(ObjectiveMismatch) as raised:
        run_bench(settings, runners=runners)
    assert {r.solver: r.status for r in raised.value.results} == {"wrong": "mismatch", "scipy": "ok"}


def test_one_repeat_past_the_limit_keeps_every_repeat_and_the_median_decides():
    """A peer that cannot be stopped and ran past the limit once: its repeats were dropped for that
    one solve's time, which became the cell's."""
    import time as clock

    calls = []

    def hiccup(cost, timeout):
        calls.append(1)
        if len(calls) == 3:
            clock.sleep(0.05)
        return runners["scipy"](cost, timeout)

    runners = default_runners()
    runners["hiccup"] = hiccup
    settings = BenchSettings(cells=((8, 1),), solvers=("scipy", "hiccup"), repeat=3, warmup=0, timeout=0.02)
    timing = next(r for r in run_bench(settings, runners=runners) if r.solver == "hiccup")
    assert timing.status == "ok" and len(timing.times_ms) == 3 and timing.median_ms < 20 and "took" in timing.message
    calls.clear()
    runners["hiccup"] = lambda cost, timeout: clock.sleep(0.05) or runners["scipy"](cost, timeout)
    timing = next(r for r in run_bench(settings, runners=runners) if r.solver == "hiccup")
    assert timing.status == "timeout" and len(timing.times_ms) == 1


def test_the_record_says_whether_the_solves_were_warm_and_names_the_cpu(tmp_path):
    from lapcli.bench.outputs import cpu_model, environment, json_bytes

    env = environment()
    for warmup, words in ((1, ", warm,"), (0, ", no warm-up,")):
        settings = BenchSettings(cells=((8, 1),), solvers=("scipy",), repeat=1, warmup=warmup)
        assert words in json.loads(json_bytes(settings, [], env))["timing"]
    assert env["cpu"] == cpu_model()
    try:
        listed = [line for line in open("/proc/cpuinfo") if line.startswith("model name")]
    except OSError:
        listed = []
    if listed:  # Linux: the model, not the architecture platform.processor() gives there
        assert env["cpu"] == listed[0].split(":", 1)[1].strip()


def test_a_cell_larger_than_memory_is_skipped_and_a_sweep_of_only_such_refused(monkeypatch, tmp_path):
    """lap bench holds a cell's whole matrix and a solver's float64 copy: at n = 120,000 int32,
    161 GiB. Such a cell is skipped, saying why, and the others are timed (the sweep drew it until
    memory ran out and lost every cell before it); a sweep of nothing else is bad input."""
    from lapcli.bench import runner

    monkeypatch.setattr(runner, "physical_memory", lambda: 20 * 2**30)
    drawn = []
    real = runner.bench_matrix
    monkeypatch.setattr(runner, "bench_matrix", lambda *args: drawn.append(args[1]) or real(*args))
    result = CliRunner().invoke(cli, ["bench", "--sizes", "16,120000", "--ranges", "1", "--solvers", "scipy",
                                      "--repeat", "1", "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv")])
    assert result.exit_code == 0, result.output
    assert drawn == [16]
    cells = {r["n"]: r for r in json.loads((tmp_path / "b.json").read_text())["results"]}
    assert cells[16]["status"] == "ok" and cells[120000]["status"] == "skipped"
    assert "the n=120000 cell holds its 120000×120000 int32 matrix" in cells[120000]["message"]
    rows = {row["n"]: row for row in csv.DictReader((tmp_path / "b.csv").open())}  # the CSV says why too
    assert rows["16"]["message"] == "" and rows["120000"]["message"] == cells[120000]["message"]
    alone = CliRunner().invoke(cli, ["bench", "--sizes", "120000", "--ranges", "1", "--solvers", "scipy"])
    assert alone.exit_code == 2 and "more than this machine's 20 GiB of memory" in alone.stderr
    assert alone.stdout == "" and drawn == [16]


def test_every_runner_is_imported_before_its_first_clock(monkeypatch):
    """With --warmup 0 the first timed solve of scipy took its import too (~0.3 s at n = 16 against
    0.03 ms at 17): each runner's prepare() runs before the sweep's first solve."""
    from lapcli.bench import runner
    from lapcli.bench.suites import BenchSettings

    order = []
    runners = {}
    for name in ("scipy", "numpy"):
        def run(cost, timeout, name=name):
            order.append(("run", name))
            return runner.default_runners()[name](cost, timeout)

        run.prepare = lambda name=name: order.append(("prepare", name))
        runners[name] = run
    settings = BenchSettings(cells=((8, 1),), solvers=("scipy", "numpy"), kind="uniform", repeat=1, warmup=0)
    runner.run_bench(settings, runners)
    assert order[:2] == [("prepare", "scipy"), ("prepare", "numpy")] and len(order) == 4
    for name, made in runner.default_runners().items():  # every default runner has one
        assert callable(getattr(made, "prepare", None)), name


@pytest.mark.parametrize("name", ["scipy", "lapx", "auto", "numpy"])
def test_a_prepared_cpu_runner_loads_nothing_in_its_first_timed_solve(name):
    """prepare() leaves nothing for the first timed call to load: lapx loaded its compiled solver
    at its first lapjv call (0.54 ms against 0.03 at n = 64 under --warmup 0), auto the exact
    integer checks."""
    import subprocess
    import sys

    if name == "lapx":
        pytest.importorskip("lap")
    script = (f"import sys, numpy as np\nfrom lapcli.bench import runner\nrun = runner.default_runners()[{name!r}]\n"
              "rng = np.random.default_rng(1)\ncosts = rng.integers(0, 64, (64, 64)), rng.random((64, 64))\n"
              "run.prepare()\nbefore = set(sys.modules)\nfor cost in costs:\n    run(cost, None)\n"
              "print(sorted(set(sys.modules) - before))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]", loaded  # (a fresh process: no other test has loaded them already)


def test_a_runner_that_cannot_load_fails_in_its_cells_not_the_sweep():
    from lapcli.bench import runner
    from lapcli.bench.suites import BenchSettings

    def broken(cost, timeout):
        raise ModuleNotFoundError("No module named 'lap'")

    def cannot_prepare():
        raise ModuleNotFoundError("No module named 'lap'")

    broken.prepare = cannot_prepare
    runners = {**runner.default_runners(), "lapx": broken}
    settings = BenchSettings(cells=((8, 1),), solvers=("lapx", "scipy"), kind="uniform", repeat=1, warmup=0)
    results = {t.solver: t for t in runner.run_bench(settings, runners)}
    assert results["lapx"].status == "error" and "No module named" in results["lapx"].message
    assert results["scipy"].status == "ok"


def test_a_range_is_written_as_one_value_however_it_was_given(tmp_path):
    """The default ranges (1, 100), a suite's, a rangeless kind's and --ranges 1,100 write R alike (100
    once read 100 in one file and 100.0 in another, which a join by value kept apart as text)."""
    written = []
    for options in ([], ["--ranges", "1,100"], ["--kind", "float"], ["--kind", "float", "--ranges", "1"]):
        path = tmp_path / f"b{len(written)}.csv"
        result = CliRunner().invoke(cli, ["bench", "--sizes", "16", "--solvers", "scipy", "--repeat", "1", "--warmup",
                                          "0", "-q", "--csv", str(path), *options])
        assert result.exit_code == 0, result.output
        written.append(sorted({row["range"] for row in csv.DictReader(path.open())}))
    assert written == [["1.0", "100.0"]] * 2 + [["1.0"]] * 2


def test_a_repeat_past_a_tiny_limit_says_how_long_it_took(tmp_path):
    """A limit of 1 µs passed by a 16 × 16 scipy solve (~0.02 ms) once read "a repeat took 0 ms"."""
    path = tmp_path / "t.csv"
    result = CliRunner().invoke(cli, ["bench", "--sizes", "16", "--ranges", "1", "--solvers", "scipy", "--timeout",
                                      "0.000001", "--repeat", "1", "--warmup", "0", "-q", "--csv", str(path)])
    assert result.exit_code == 0, result.output
    message = next(csv.DictReader(path.open()))["message"]
    took = float(message.removeprefix("a repeat took ").removesuffix(" ms"))
    assert 0.001 < took < 10 and message == f"a repeat took {took:.3g} ms"


def test_the_plot_draws_every_cell_with_a_time_and_rings_those_past_the_limit(monkeypatch):
    """Only "ok" cells were drawn: a table of "past limit" times plotted empty panels, and
    legend() on an empty first panel warned on stderr under -q."""
    pytest.importorskip("matplotlib")
    import warnings

    import matplotlib.pyplot as plt

    from lapcli.bench.outputs import plot_bytes
    from lapcli.bench.suites import SolveTiming

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)
    results = [SolveTiming(64, 1, "int32", "lapx", "timeout", times_ms=[2.0]),
               SolveTiming(512, 1, "int32", "lapx", "ok", times_ms=[3.0]),
               SolveTiming(512, 1, "int32", "scipy", "skipped"),
               SolveTiming(64, 100, "int32", "scipy", "error")]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a legend of nothing warns
        assert plot_bytes(results, {}).startswith(b"\x89PNG")
        plot_bytes(results[2:], {})  # no cell with a time anywhere: no legend
    first, second = figures[0].axes[:2]
    drawn = [(list(line.get_xdata()), list(line.get_ydata())) for line in first.lines]
    assert drawn == [([64, 512], [2.0, 3.0]), ([64], [2.0])]  # the line, then its past-limit ring
    assert not second.lines and first.get_legend() is not None
    assert figures[1].axes[0].get_legend() is None
