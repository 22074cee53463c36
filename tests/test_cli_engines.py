"""`lap info`, `--version`, `python -m lapcli`, and the solve options that came with the engine
registry and the certificate: --duals, --cost-limit, --device, the certified report."""

import importlib.util
import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli

from lapcli.cli.main import cli
from lapcli.engines import ENGINES


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def test_info_lists_every_registered_engine_and_why_it_cannot_run():
    result = invoke("info", "--json")
    assert result.exit_code == 0
    facts = json.loads(result.stdout)
    assert [e["name"] for e in facts["engines"]] == list(ENGINES)
    for engine in facts["engines"]:
        assert engine["why"]  # a reason either way
    assert facts["versions"]["lapcli"]
    table = invoke("info")
    assert all(name in table.stdout for name in ENGINES)


def test_info_prints_the_no_device_reason_whole(monkeypatch):
    from lapcli import info

    monkeypatch.setattr(info, "cuda_status", lambda: (False, "CuPy is not installed (pip install 'lapcli[cuda13]')"))
    monkeypatch.setattr(info, "collect", lambda: {"engines": [], "devices": [], "versions": {"lapcli": "x"}})
    assert "no CUDA device: CuPy is not installed (pip install 'lapcli[cuda13]')" in invoke("info").stdout


def test_version_names_lap_and_python_dash_m_works():
    assert invoke("--version").stdout.startswith("lap (lapcli) ")
    result = subprocess.run([sys.executable, "-m", "lapcli", "--version"], capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.startswith("lap (lapcli) ")


def test_solver_choices_come_from_the_registry():
    result = invoke("solve", "--help")
    for name in ENGINES:
        assert name in result.stdout


def test_duals_file_proves_the_assignment(tmp_path, rng):
    cost = rng.integers(0, 100, (6, 9))
    np.save(tmp_path / "m.npy", cost)
    for suffix in (".npz", ".json"):
        target = tmp_path / f"d{suffix}"
        result = invoke("solve", tmp_path / "m.npy", "--solver", "numpy", "--duals", target, "--json", "--quiet")
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["certified"] and report["certificate"]["where"] == "host"
        if suffix == ".npz":
            duals = np.load(target)
            u, v = duals["u"], duals["v"]
        else:
            loaded = json.loads(target.read_text())
            u, v = np.array(loaded["u"]), np.array(loaded["v"])
        slack = cost - u[:, None] - v[None, :]
        assert (slack >= 0).all() and u.shape == (6,) and v.shape == (9,)


def test_duals_with_the_default_solver_on_a_cpu_prove_the_assignment(tmp_path, rng):
    """scipy keeps no duals: --duals recovers them (however costly), and the report is certified."""
    cost = rng.integers(0, 100, (7, 9))
    np.save(tmp_path / "m.npy", cost)
    result = invoke("solve", tmp_path / "m.npy", "--duals", tmp_path / "d.npz", "-o", tmp_path / "x.npy",
                    "--report", tmp_path / "r.json", "--quiet")
    assert result.exit_code == 0, result.stderr
    duals, x = np.load(tmp_path / "d.npz"), np.load(tmp_path / "x.npy")
    reduced = cost - duals["u"][:, None] - duals["v"][None, :]
    assert reduced.min() >= 0 and (reduced[np.arange(7), x] == 0).all()
    assert json.loads((tmp_path / "r.json").read_text())["certified"]


def test_duals_of_a_cost_limited_solve_are_refused_before_any_work(tmp_path, rng):
    """The augmented problem's duals are not the caller's, whatever the engine: exit 2 before
    the solve, no file written."""
    np.save(tmp_path / "m.npy", rng.integers(0, 100, (5, 5)))
    result = invoke("solve", tmp_path / "m.npy", "--cost-limit", "50", "--duals", tmp_path / "d.npz",
                    "-o", tmp_path / "x.npy", "--quiet")
    assert result.exit_code == 2 and "does not go with --cost-limit" in result.stderr
    assert not (tmp_path / "d.npz").exists() and not (tmp_path / "x.npy").exists()


def test_a_maximised_cost_limit_is_refused_before_any_input_is_read(tmp_path):
    """As --duals with --cost-limit: said before the input is opened (stdin would be read whole
    first), in the option's own name."""
    result = invoke("solve", tmp_path / "absent.npy", "--cost-limit", "1", "--maximize", "--quiet")
    assert result.exit_code == 2 and "--cost-limit applies to minimisation" in result.stderr


def test_duals_past_int64_are_exact_in_json_and_refused_as_npz_with_no_file(tmp_path):
    """Maximising uint64 costs near 2^64: every dual pair sums to about 2^64, which no two int64
    values reach, so the duals are Python ints: JSON keeps them exact; NPZ (which would pickle them)
    is refused before any file, the assignment's included, is written."""
    cost = np.array([[2**64 - 1, 2**64 - 5], [2**64 - 3, 2**64 - 1]], dtype=np.uint64)
    np.save(tmp_path / "m.npy", cost)
    result = invoke("solve", tmp_path / "m.npy", "--maximize", "--duals", tmp_path / "d.json", "--quiet")
    assert result.exit_code == 0, result.stderr
    duals = json.loads((tmp_path / "d.json").read_text())
    slack = [[int(cost[i, j]) - duals["u"][i] - duals["v"][j] for j in range(2)] for i in range(2)]
    assert max(max(row) for row in slack) == 0 and slack[0][0] == slack[1][1] == 0
    refused = invoke("solve", tmp_path / "m.npy", "--maximize", "--duals", tmp_path / "d.npz", "-o",
                     tmp_path / "x.npy", "--quiet")
    assert refused.exit_code == 2 and "json" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "d.npz").exists() and not (tmp_path / "x.npy").exists()


def test_cost_limit_on_the_command_line(tmp_path):
    np.save(tmp_path / "m.npy", np.array([[1, 10], [10, 20]]))
    result = invoke("solve", tmp_path / "m.npy", "--cost-limit", "5", "-o", tmp_path / "x.npy", "--quiet")
    assert result.exit_code == 0, result.output
    assert np.load(tmp_path / "x.npy").tolist() == [0, -1]
    for limit in ("nan", "1" + "0" * 5000):  # (past 4300 digits int() raises ValueError)
        bad = invoke("solve", tmp_path / "m.npy", "--cost-limit", limit, "--quiet")
        assert bad.exit_code == 2 and "finite" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    zeros = invoke("solve", tmp_path / "m.npy", "--cost-limit", "0" * 5000 + "5", "-o", tmp_path / "z.npy", "-q")
    assert zeros.exit_code == 0 and np.load(tmp_path / "z.npy").tolist() == [0, -1]  # 5: its zeros are no digits
    # an integral limit past 2^53 stays exact beside integer costs (as a float it rounded down to 2^54)
    np.save(tmp_path / "w.npy", np.full((2, 2), 2**54 + 1))
    for limit, expected in ((2**54 + 2, [0, 1]), (2**54, [-1, -1])):
        result = invoke("solve", tmp_path / "w.npy", "--cost-limit", limit, "-o", tmp_path / "w.npy.x.npy", "-q")
        assert result.exit_code == 0 and np.load(tmp_path / "w.npy.x.npy").tolist() == expected
    library = lapcli.solve(np.full((2, 2), 2**54 + 1), cost_limit=2**54)
    assert np.load(tmp_path / "w.npy.x.npy").tolist() == library.x.tolist()
    # written with a point or an exponent, an integral limit is that integer; a fraction float64 drops is
    # refused (9007199254740995.5 read as 9007199254740996.0, which then took a pair costing that much)
    np.save(tmp_path / "c.npy", np.array([[2**53 + 4]]))
    for limit in ("9007199254740995", "9007199254740995.0", "9.007199254740995e15", "9007199254740995e0",
                  "9_007_199_254_740_995", "9_007_199_254_740_995.0", " 90071992547409950e-00001 "):
        result = invoke("solve", tmp_path / "c.npy", "--cost-limit", limit, "-o", tmp_path / "c.x.npy", "-q")
        assert result.exit_code == 0 and np.load(tmp_path / "c.x.npy").tolist() == [-1], limit
    for limit, read in (("9007199254740995.5", "9007199254740996.0"), ("9_007_199_254_740_995.5", "9007199254740996.0"),
                        ("1e-00400", "0.0"), ("-5e-99999999999999999999", "-0.0")):  # (past Decimal's exponents)
        dropped = invoke("solve", tmp_path / "c.npy", "--cost-limit", limit, "-q")
        assert dropped.exit_code == 2 and len(dropped.stderr.strip().splitlines()) == 1
        assert f"{limit} reads as {read} in float64, which drops its fraction" in dropped.stderr
    for spelling in ("_5", "1__0"):  # Python's float() refuses them; Decimal alone read them as 5 and 10
        assert "is not a valid float" in invoke("solve", tmp_path / "m.npy", "--cost-limit", spelling, "-q").stderr
    for limit, expected in (("1.5", [0, -1]), ("2.55e1", [1, 0]), (".5e1", [0, -1])):  # fractions float64 keeps
        result = invoke("solve", tmp_path / "m.npy", "--cost-limit", limit, "-o", tmp_path / "f.npy", "-q")
        assert result.exit_code == 0 and np.load(tmp_path / "f.npy").tolist() == expected, limit


def test_device_without_a_gpu_is_a_one_line_error(tmp_path):
    from lapcli.engines import cuda_status

    np.save(tmp_path / "m.npy", np.eye(3))
    result = invoke("solve", tmp_path / "m.npy", "--device", "7", "--quiet")
    assert result.exit_code == 2
    assert ("CuPy" in result.stderr or "device" in result.stderr) and len(result.stderr.strip().splitlines()) == 1
    if cuda_status()[0]:
        assert "there" in result.stderr  # names how many devices exist


@pytest.mark.parametrize("call", ["solve", "solve_batch"])
def test_a_device_that_is_not_here_is_refused_by_both_entries(call):
    """solve_batch once took any ordinal and ran on the CPU (a GPU host: CuPy's own error later)."""
    costs = np.arange(12.0).reshape(1, 3, 4)
    with pytest.raises(lapcli.LapInputError, match="^device 99"):
        getattr(lapcli, call)(costs[0] if call == "solve" else costs, device=99)


def test_an_engine_bug_is_exit_1_not_bad_input(tmp_path, monkeypatch, rng):
    from lapcli.engines.cpu import scipy as scipy_engine

    def broken(problem, **options):
        raise ValueError("index 7 is out of bounds")  # what a bug inside an engine looks like

    monkeypatch.setattr(scipy_engine, "run", broken)
    np.save(tmp_path / "m.npy", rng.integers(0, 9, (4, 4)))
    result = invoke("solve", tmp_path / "m.npy", "--solver", "scipy", "--quiet")
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error" in lines[0] and "bug" in lines[0]
    bad = invoke("solve", tmp_path / "missing.npy")  # lapcli's own input error stays exit 2
    assert bad.exit_code == 2


@pytest.mark.parametrize("shape, maximize", [((40, 40), False), ((30, 45), True), ((45, 30), False)])
def test_lapx_engine_solves_through_lapxs_import_name(rng, shape, maximize):
    """lapx installs the package ``lap``; the engine must find it there (it once imported ``lapx``)."""
    from lapcli.engines import registry

    available, why = registry.get("lapx").available()
    if not available:
        pytest.skip(why)
    costs = rng.integers(0, 1000, shape).astype(np.float64)
    costs[3, 5] = np.inf if not maximize else -np.inf
    solution = lapcli.solve(costs, solver="lapx", maximize=maximize)
    rows, cols = scipy_lsa(costs, maximize=maximize)
    assert solution.objective == pytest.approx(costs[rows, cols].sum())
    assert solution.report.solver == "lapx"


def test_lapx_on_costs_near_float64s_largest_warns_nothing():
    """lapx's lapjv sums its own objective, which lapcli does not read: near float64's largest the
    sum overflowed and NumPy's RuntimeWarning reached the caller."""
    from lapcli.engines import registry

    available, why = registry.get("lapx").available()
    if not available:
        pytest.skip(why)
    costs = np.array([[0.0, 1e308, 1.7e308], [0.0, 1.7e308, 1e308], [0.0, 1.7e308, 1e308]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        solution = lapcli.solve(costs, solver="lapx")
    assert solution.report.solver == "lapx" and sorted(solution.col_ind.tolist()) == [0, 1, 2]
    assert costs[solution.row_ind, solution.col_ind].tolist().count(1e308) == 2  # the optimum's pairs


@pytest.fixture
def fresh_lapx_probe():
    """The lapx probe and lapx_module read once a process: cleared around a test that changes them."""
    from lapcli.engines import registry
    from lapcli.engines.cpu.lapx import lapx_module

    for cached in (registry.lapx_status, lapx_module):
        cached.cache_clear()
    yield registry.lapx_status
    for cached in (registry.lapx_status, lapx_module):
        cached.cache_clear()


def test_lapx_probe_reads_the_distribution_not_a_module_named_lapx(monkeypatch, fresh_lapx_probe):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert fresh_lapx_probe() == (False, "lapx is not installed (pip install 'lapcli[lapx]')")
    reads = []
    monkeypatch.setattr(metadata, "version", lambda name: reads.append(name) or "9.9")
    fresh_lapx_probe.cache_clear()
    assert fresh_lapx_probe() == fresh_lapx_probe() and reads == ["lapx"]  # once a process
    if importlib.util.find_spec("lap") is not None:  # (the peer installed, as CI installs it)
        assert fresh_lapx_probe()[0] and fresh_lapx_probe()[1].endswith(" is installed")


def test_a_lapx_that_does_not_import_is_unavailable_and_auto_solves_without_it(monkeypatch, tmp_path,
                                                                               fresh_lapx_probe):
    """lapx installed but its package failing to import (a wheel built for another NumPy): the probe
    says so, ``--solver lapx`` is refused with it (exit 2), and auto, which would pick lapx on this
    square, solves with scipy."""
    import sys
    from importlib import metadata

    monkeypatch.setattr(metadata, "version", lambda name: "9.9")
    monkeypatch.setitem(sys.modules, "lap", None)  # `import lap` raises ImportError
    available, why = fresh_lapx_probe()
    assert not available and why.startswith("lapx 9.9 is installed but does not import (")
    np.save(tmp_path / "c.npy", np.random.default_rng(3).integers(0, 99, (80, 80)))
    refused = invoke("solve", tmp_path / "c.npy", "--solver", "lapx")
    assert refused.exit_code == 2 and refused.stderr.startswith(
        "Error: solver 'lapx' cannot run here: lapx 9.9 is installed but does not import (") and \
        len(refused.stderr.splitlines()) == 1, refused.output
    solved = invoke("solve", tmp_path / "c.npy", "--json", "--quiet")
    assert solved.exit_code == 0, solved.output
    assert json.loads(solved.stdout)["solver"] in ("scipy", "cuda", "cuda-sap")
