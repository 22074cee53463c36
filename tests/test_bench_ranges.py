"""`lap bench --suite ranges` on the CPU: suites of several kinds, the engine `auto`
ran, a baseline that is the fastest of several solvers, and the timeout skip per kind."""

import csv
import importlib.util
import json

import pytest
from click.testing import CliRunner

import lapcli
from lapcli.bench import runner as bench
from lapcli.bench.runner import RunOutcome, default_runners, run_bench
from lapcli.bench.suites import SUITES, BenchSettings, SolveTiming, SuiteGroup, grid_cells
from lapcli.bench.table import ms_text
from lapcli.bench.table import results_table_columns, results_table_rows
from lapcli.cli.main import cli
from lapcli.engines import registry
from lapcli.generate import kind_dtype

# lapx is an optional peer (pip install 'lapcli[lapx]'; it installs the module ``lap``)
needs_lapx = pytest.mark.skipif(importlib.util.find_spec("lap") is None,
                                reason="needs lapx: pip install 'lapcli[lapx]' (the module 'lap' is not installed)")

TINY_RANGES = (
    SuiteGroup("uniform", ("int32",), grid_cells((8, 12), (0.1, 1000))),
    SuiteGroup("float", ("float32", "float64"), grid_cells((8, 12), (1,))),
    SuiteGroup("geometric", ("float64",), grid_cells((8, 12), (1,))),
)


def test_ranges_suite_holds_exactly_its_kinds_sizes_and_ranges():
    sizes = (1024, 2048, 4096, 8192)
    expected = {("uniform", "int32", n, r) for n in sizes for r in (0.1, 1, 10, 100, 1000)}
    expected |= {("float", dtype, n) for n in sizes for dtype in ("float32", "float64")}
    expected |= {("geometric", "float64", n) for n in sizes}
    cells = []
    for group in SUITES["ranges"]:
        for dtype in group.dtypes:
            for n, r in group.cells:  # the float kinds do not use R: one R each
                cells.append((group.kind, dtype, n, r) if group.kind == "uniform" else (group.kind, dtype, n))
                assert group.kind == "uniform" or r == 1
    assert len(cells) == len(set(cells)) == 4 * 5 + 4 * 2 + 4  # 32 matrices, each solved by every solver
    assert set(cells) == expected
    settings = BenchSettings(cells=(), solvers=("scipy", "lapx"), kind=None, groups=SUITES["ranges"])
    assert settings.cell_count == 32 and settings.kind is None and settings.dtypes is None


def test_the_older_suites_are_one_group_that_takes_kind_and_dtypes():
    for name in ("papers", "quick", "hylac", "gpu-check"):
        (group,) = SUITES[name]
        assert group.kind is None and group.dtypes is None
        sizes = tuple(dict.fromkeys(n for n, _ in group.cells))
        for kind in ("float", "geometric-int"):  # R does not change such a matrix: each size once, at R = 1
            assert group.resolve(kind, None) == SuiteGroup(kind, (kind_dtype(kind),), tuple((n, 1) for n in sizes))
            named = group.resolve(kind, None, ranges_named=True)  # --ranges given: kept as named
            assert named == SuiteGroup(kind, (kind_dtype(kind),), group.cells)
        assert group.resolve("uniform", ("int64",)) == SuiteGroup("uniform", ("int64",), group.cells)


def test_single_kind_settings_and_records_are_as_before(tmp_path):
    result = CliRunner().invoke(cli, ["bench", "--suite", "quick", "--kind", "float", "--solvers", "scipy",
                                      "--repeat", "1", "--warmup", "0", "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "b.json").read_text())
    settings = payload["settings"]
    assert settings["kind"] == "float" and settings["dtypes"] == ["float64"] and settings["baseline"] == "scipy"
    assert [tuple(c) for c in settings["cells"]] == [(16, 1), (64, 1), (128, 1)]  # floats: R is no axis
    assert {(r["kind"], r["dtype"], r["engine"]) for r in payload["results"]} == {("float", "float64", "scipy")}
    header = next(line for line in result.stderr.splitlines() if "┃" in line)
    assert "kind" not in header  # one kind: no kind column


def table_rows(stderr: str) -> tuple[list[str], list[list[str]]]:
    header = next(line for line in stderr.splitlines() if "┃" in line)
    rows = [line for line in stderr.splitlines() if line.startswith("│")]
    split = lambda line, bar: [field.strip() for field in line.strip(bar).split(bar)]  # noqa: E731
    return split(header, "┃"), [split(row, "│") for row in rows]


@needs_lapx
def test_a_suite_of_several_kinds_through_the_cli(tmp_path, monkeypatch):
    monkeypatch.setitem(SUITES, "ranges", TINY_RANGES)
    result = CliRunner().invoke(cli, ["bench", "--suite", "ranges", "--solvers", "scipy,lapx,auto",
                                      "--baseline", "scipy,lapx", "--repeat", "2", "--warmup", "0",
                                      "--json", str(tmp_path / "b.json"), "--csv", str(tmp_path / "b.csv")])
    assert result.exit_code == 0, result.output
    payload = json.loads((tmp_path / "b.json").read_text())
    results = payload["results"]
    assert payload["settings"]["suite"] == "ranges" and payload["settings"]["baseline"] == ["scipy", "lapx"]
    assert len(results) == (2 * 2 + 2 * 2 + 2) * 3  # matrices × solvers
    assert all(r["status"] == "ok" for r in results)
    assert {(r["kind"], r["dtype"]) for r in results} == {
        ("uniform", "int32"), ("float", "float32"), ("float", "float64"), ("geometric", "float64")}
    engines = set(registry.solver_choices(batch=False)) - {"auto"}
    for r in results:  # auto: the engine it chose (scipy on a CPU); the others: themselves
        assert r["engine"] in engines and (r["solver"] == "auto" or r["engine"] == r["solver"])
    rows = list(csv.DictReader((tmp_path / "b.csv").open()))
    assert len(rows) == 2 * len(results) and all(row["kind"] and row["engine"] for row in rows)

    header, table = table_rows(result.stderr)
    assert header == ["n", "R", "kind", "dtype", "scipy", "lapx", "auto"]
    assert "faster of scipy, lapx in each cell" in result.stderr
    assert len(table) == len(results) // 3
    timing = {(r["kind"], r["dtype"], r["n"], r["range_factor"], r["solver"]): r for r in results}
    for n, r_text, kind, dtype, scipy_text, lapx_text, auto_text in table:
        assert (r_text == "—") == (kind != "uniform")  # R means nothing to the float kinds
        r = 1 if r_text == "—" else float(r_text)
        cell = {solver: timing[(kind, dtype, int(n), r, solver)] for solver in ("scipy", "lapx", "auto")}
        base = min(cell["scipy"]["median_ms"], cell["lapx"]["median_ms"])
        speedup = base / cell["auto"]["median_ms"]
        assert auto_text == f"{ms_text(cell['auto']['median_ms'])} ({speedup:.2f}×) {cell['auto']['engine']}"
        assert "×" not in scipy_text and "×" not in lapx_text  # the baselines get no speedup


def test_sizes_cut_a_suite_down_to_its_cells_of_those_n(tmp_path, monkeypatch):
    monkeypatch.setitem(SUITES, "ranges", TINY_RANGES)
    result = CliRunner().invoke(cli, ["bench", "--suite", "ranges", "--sizes", "12", "--solvers", "scipy",
                                      "--repeat", "1", "--warmup", "0", "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "b.json").read_text())["results"]
    assert {r["n"] for r in results} == {12}
    assert {(r["kind"], r["dtype"]) for r in results} == {
        ("uniform", "int32"), ("float", "float32"), ("float", "float64"), ("geometric", "float64")}
    assert len(results) == 2 + 2 + 1  # uniform at two ranges, two float dtypes, geometric


def test_the_kind_column_tells_float64_from_geometric():
    timings = [SolveTiming(8, 1, "float64", "scipy", "ok", kind=kind, engine="scipy", times_ms=[1.0])
               for kind in ("float", "geometric")]
    assert results_table_columns(timings, ("scipy",)) == ("n", "R", "kind", "dtype", "scipy")
    assert [row[2] for row in results_table_rows(timings, ("scipy",), "scipy")] == ["float", "geometric"]


def test_baseline_of_several_takes_the_fastest_that_solved_the_cell():
    def cell(n, scipy_ms, lapx_ms, lapx_status="ok"):
        return [SolveTiming(n, 1, "int32", "scipy", "ok", times_ms=[scipy_ms]),
                SolveTiming(n, 1, "int32", "lapx", lapx_status, times_ms=[lapx_ms]),
                SolveTiming(n, 1, "int32", "auto", "ok", engine="cuda", times_ms=[2.0])]

    results = cell(8, 10.0, 4.0) + cell(16, 10.0, 40.0) + cell(32, 10.0, 1.0, "error")
    rows = results_table_rows(results, ("scipy", "lapx", "auto"), ("scipy", "lapx"))
    assert [row[-1] for row in rows] == ["2.00 (2.00×) cuda", "2.00 (5.00×) cuda", "2.00 (5.00×) cuda"]
    one = results_table_rows(results, ("scipy", "lapx", "auto"), "scipy")  # one name: as before
    assert [row[-1] for row in one] == ["2.00 (5.00×) cuda"] * 3
    assert [row[-2] for row in one] == ["4.00 (2.50×)", "40.00 (0.25×)", "error"]


def test_a_solve_timed_past_the_limit_shows_its_time_and_is_a_baseline():
    """A peer that cannot be stopped (guthe-omp) is timed to its end and marked timeout: the
    table shows that time, marked, and the other solvers' speedups over it; a solve stopped at
    the limit has no time and shows its status."""
    results = [SolveTiming(32, 1, "int32", "guthe-omp", "timeout", times_ms=[21776.0], message="took 21776 ms"),
               SolveTiming(32, 1, "int32", "cuda", "timeout", message="the kernel ran past its time limit"),
               SolveTiming(32, 1, "int32", "auto", "ok", engine="cuda-sap", times_ms=[544.4])]
    (row,) = results_table_rows(results, ("guthe-omp", "cuda", "auto"), "guthe-omp")
    assert row[-3:] == ["21776.00 past limit", "timeout", "544.40 (40.00×) cuda-sap"]


def test_a_solve_stopped_at_a_later_repeat_keeps_no_time():
    """Repeat 1 within the limit, repeat 2 stopped by it: the cell is a timeout with no time, so
    the table shows no time for it and it is no baseline."""
    from lapcli.errors import SolverError

    honest, calls = default_runners()["scipy"], []

    def stopped_second_time(cost, timeout):
        calls.append(timeout)
        if len(calls) > 1:
            raise SolverError("the kernel ran past its time limit")
        return honest(cost, timeout)

    runners = {"scipy": honest, "stopped": stopped_second_time}
    settings = BenchSettings(cells=((8, 1),), solvers=("stopped", "scipy"), repeat=2, warmup=0, timeout=5)
    results = run_bench(settings, runners=runners)
    stopped = next(t for t in results if t.solver == "stopped")
    assert (stopped.status, stopped.times_ms, stopped.timed) == ("timeout", [], False)
    (row,) = results_table_rows(results, ("stopped", "scipy"), ("stopped", "scipy"))
    assert row[-2] == "timeout" and "past limit" not in row[-1]


def test_a_wrong_answer_past_the_limit_is_a_mismatch():
    """A peer timed past the limit is a baseline, so its objective is checked like any other."""
    import time

    honest = default_runners()["scipy"]

    def slow_and_wrong(cost, timeout):
        time.sleep(0.06)
        return honest(cost, timeout)[0] + 1, []

    settings = BenchSettings(cells=((8, 1),), solvers=("scipy", "slow"), repeat=1, warmup=0, timeout=0.05)
    with pytest.raises(bench.ObjectiveMismatch, match="slow found"):
        run_bench(settings, runners={"scipy": honest, "slow": slow_and_wrong})


def test_auto_records_the_engine_it_ran_and_older_runners_still_work():
    honest = default_runners()["scipy"]
    runners = {
        "auto": lambda cost, timeout: RunOutcome(*honest(cost, timeout)[:2], "cuda"),
        "pair": lambda cost, timeout: tuple(honest(cost, timeout)[:2]),  # (objective, steps), as before
    }
    settings = BenchSettings(cells=((8, 1),), solvers=("auto", "pair"), repeat=2, warmup=0)
    assert [(t.solver, t.engine, t.kind) for t in run_bench(settings, runners=runners)] == [
        ("auto", "cuda", "uniform"), ("pair", "pair", "uniform")]
    assert default_runners()["auto"](__import__("numpy").eye(3), None).engine in registry.ENGINES


def test_a_timeout_skips_larger_n_of_its_own_kind_only():
    honest = default_runners()["scipy"]
    calls = []

    def slow_first(cost, timeout):  # times out on the first matrix (geometric n=8), then is fine
        calls.append(cost.shape)
        if len(calls) == 1:
            raise lapcli.SolverError("exceeded its time limit")
        return honest(cost, timeout)

    groups = (SuiteGroup("geometric", ("float64",), grid_cells((8, 16), (1,))),
              SuiteGroup("float", ("float64",), grid_cells((8, 16), (1,))))
    settings = BenchSettings(cells=(), solvers=("scipy", "slow"), kind=None, groups=groups, repeat=1, warmup=0,
                             timeout=1)
    statuses = [(t.kind, t.n, t.status) for t in run_bench(settings, runners={"scipy": honest, "slow": slow_first})
                if t.solver == "slow"]
    assert statuses == [("geometric", 8, "timeout"), ("geometric", 16, "skipped"),
                        ("float", 8, "ok"), ("float", 16, "ok")]


@pytest.mark.parametrize("extra, fragment", [
    (["--suite", "ranges", "--kind", "float"], "--suite ranges has its own kinds and dtypes; drop --kind"),
    (["--suite", "ranges", "--kind", "uniform"], "drop --kind"),  # the default, given: still refused
    (["--suite", "ranges", "--dtypes", "float64"], "drop --dtypes"),
    (["--suite", "ranges", "--kind", "geometric", "--dtypes", "float64"], "drop --kind, --dtypes"),
    (["--suite", "ranges", "--ranges", "8"], "either --suite or --ranges"),
    (["--suite", "ranges", "--sizes", "1024,100"], "--suite ranges has no cells of n = 100 (its sizes: 1024, 2048"),
    (["--sizes", "8", "--baseline", "scipy,nope"], "--baseline 'nope' is not among the solvers"),
    (["--sizes", "8", "--baseline", "scipy,numpy,lapx"], "--baseline 'lapx' is not among the solvers"),
    (["--sizes", "8", "--baseline", ","], "at least one value"),
])
def test_ranges_usage_errors_are_one_line_exit_2(tmp_path, monkeypatch, extra, fragment):
    def must_not_run(*args, **kwargs):
        raise AssertionError("the sweep started")

    monkeypatch.setattr(bench, "default_runners", must_not_run)
    # solvers that run everywhere (a solver that cannot run here is refused too: its own test)
    result = CliRunner().invoke(cli, ["bench", *extra, "--solvers", "scipy,numpy", "--json", str(tmp_path / "b.json")])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert not (tmp_path / "b.json").exists()


def test_structured_suite_holds_distances_floats_and_wide_integers_up_to_32768():
    sizes = (2048, 4096, 8192, 16384, 32768)
    kinds = {(group.kind, dtype) for group in SUITES["structured"] for dtype in group.dtypes}
    assert kinds == {("geometric-int", "int32"), ("geometric", "float64"), ("float", "float32"),
                     ("float", "float64"), ("uniform", "int32")}
    for group in SUITES["structured"]:
        assert tuple(n for n, _ in group.cells) == sizes
        assert {r for _, r in group.cells} == ({1000} if group.kind == "uniform" else {1})
