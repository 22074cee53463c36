"""Engine ``sorted`` on 1-D point sets of different sizes (lapcli.engines.cpu.sorted_band): the
smaller set matched in order to part of the larger by the band programme, duals along chains of
neighbouring pairs, certified on every cost; scipy's optimum on every metric, in both senses."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa
from scipy.spatial.distance import cdist

import lapcli
from lapcli.engines import auto
from lapcli.engines.cpu import sorted_band
from lapcli.errors import SolverError
from lapcli.points import costs, prepare_points

from .test_points import CASES, run_cli, scipy_cdist


def sets(rng, n, m, kind):
    if kind == "tied":  # nonzero integer coordinates (cosine refuses the origin): many equal costs
        values = np.array([-3.0, -2.0, -1.0, 1.0, 2.0, 3.0])
        return rng.choice(values, size=(n, 1)), rng.choice(values, size=(m, 1))
    if kind == "apart":
        return rng.random((n, 1)), rng.random((m, 1)) * 3 + 5
    return rng.normal(size=(n, 1)), rng.normal(size=(m, 1)) * 2 + 0.3


def assert_duals_prove(solution, cost, maximize):
    """The caller's duals on cdist's matrix: every reduced cost of the right sign, the pairs tight,
    the larger side's free points at 0 and the taken ones on the right side of it."""
    u, v = (np.asarray(side) for side in solution.duals)
    sign = -1.0 if maximize else 1.0
    slack = sign * (cost - u[:, None] - v[None, :])
    tolerance = 1e-9 * max(1.0, float(np.abs(cost).max())) * max(cost.shape)
    assert slack.min() >= -tolerance
    assert np.abs(slack[solution.row_ind, solution.col_ind]).max() <= tolerance
    larger, taken = (v, solution.col_ind) if cost.shape[1] > cost.shape[0] else (u, solution.row_ind)
    free = np.setdiff1d(np.arange(len(larger)), taken)
    assert np.abs(larger[free]).max(initial=0.0) <= tolerance and (sign * larger).max() <= tolerance


@pytest.mark.parametrize("kind", ["normal", "tied", "apart"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("metric, p", CASES)
@pytest.mark.parametrize("shape", [(1, 5), (5, 1), (30, 31), (40, 90), (90, 40), (120, 121)])
def test_rectangles_are_scipy_s_optimum_and_certified(rng, shape, metric, p, maximize, kind):
    n, m = shape
    a, b = sets(rng, n, m, kind)
    solution = lapcli.solve_points(a, b, metric, p=p, maximize=maximize)
    cost = scipy_cdist(a, b, metric, p)
    rows, cols = scipy_lsa(cost, maximize=maximize)
    assert solution.report.solver == "sorted" and solution.report.certified, solution.report.certificate
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12, abs=1e-12)
    assert len(solution.row_ind) == min(n, m) and len(set(solution.col_ind.tolist())) == min(n, m)
    assert_duals_prove(solution, cost, maximize)


def test_the_band_s_pairs_are_the_least_non_crossing_ones(rng):
    """band_pairs against every increasing choice of 3 of 7 columns (35 of them)."""
    from itertools import combinations

    for _ in range(20):
        x, y = np.sort(rng.normal(size=(3, 1)), axis=0), np.sort(rng.normal(size=(7, 1)), axis=0)
        pairs = sorted_band.band_pairs(x, y, "sqeuclidean", 2.0, 1.0)
        totals = {c: costs(x, y[list(c)], "sqeuclidean").sum() for c in combinations(range(7), 3)}
        assert totals[tuple(pairs)] == pytest.approx(min(totals.values()), rel=1e-12)
        assert np.all(np.diff(pairs) > 0)


def test_the_chains_give_the_duals_of_the_free_and_taken_columns(rng):
    """chain_duals on a rectangle: free columns 0, taken ones ≤ 0, every reduced cost ≥ 0 (to a
    rounding), the pairs tight."""
    x, y = np.sort(rng.normal(size=(60, 1)), axis=0), np.sort(rng.normal(size=(100, 1)), axis=0)
    pairs = sorted_band.band_pairs(x, y, "cityblock", 2.0, 1.0)
    u, v = sorted_band.chain_duals(x, y, pairs, "cityblock", 2.0, 1.0)
    cost = costs(x[:, None, :], y[None, :, :], "cityblock")
    assert (cost - u[:, None] - v[None, :]).min() >= -1e-12
    assert np.abs(cost[np.arange(60), pairs] - u - v[pairs]).max() <= 1e-12
    assert np.all(v[np.setdiff1d(np.arange(100), pairs)] == 0) and v.max() <= 1e-12


@pytest.mark.parametrize("n, m", [(30, 50), (300, 301)])
def test_auto_keeps_rectangles_past_the_band_s_budget_off_it(rng, monkeypatch, n, m):
    """The budget counts the band's cells and each row's own cost: a thin band of many rows is dear
    too (300 × 301: 600 cells, 300 rows)."""
    a, b = rng.random((n, 1)), rng.random((m, 1))
    assert prepare_points(a, b).along_a_line and not prepare_points(a, b).on_a_line
    assert sorted_band.band_work(n, m) == sorted_band.band_cells(n, m) + sorted_band.ROW_CELLS * n
    monkeypatch.setattr(auto, "BAND_UP_TO", sorted_band.band_work(n, m) - 1)  # (300 × 301: 600 cells, 307,800 with its rows)
    solution = lapcli.solve_points(a, b)
    cost = cdist(a, b, "sqeuclidean")
    assert solution.report.solver != "sorted"
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_the_band_honours_the_time_limit(rng):
    a, b = rng.random((400, 1)), rng.random((900, 1))
    with pytest.raises(SolverError, match="sorted band ran past the time limit: 0 of 400 rows matched"):
        lapcli.solve_points(a, b, timeout=1e-6)


@pytest.mark.parametrize("width, every", [(1 << 20, 3), (1 << 23, 1), (1, 4092)])
def test_the_band_looks_at_the_clock_by_cells_not_rows(rng, monkeypatch, width, every):
    """A clock one second further at each look: a limit of 2.5 s stops the programme at the third
    look, every ``every`` rows (CELLS_A_CHECK cells, a row's own cost counted), on wide bands too;
    the read-back looks as well (its first look the fifth)."""
    clock = iter(range(1, 10**6))
    monkeypatch.setattr(sorted_band, "perf_counter", lambda: next(clock))
    k = 3 * every + 1
    x, y = np.zeros((k, 1)), np.zeros((k + width - 1, 1))
    with pytest.raises(SolverError, match=f"past the time limit: {2 * every:,} of {k:,} rows matched"):
        sorted_band.band_pairs(x, y, "cityblock", 2.0, 1.0, timeout=2.5, began=0.0)
    clock = iter(range(1, 10**6))
    with pytest.raises(SolverError, match=f"past the time limit: 0 of {k:,} pairs read back"):
        sorted_band.band_pairs(x, y, "cityblock", 2.0, 1.0, timeout=4.5, began=0.0)  # 4 looks forward


def test_the_read_back_does_not_stop_at_its_last_row(monkeypatch):
    """A band of fewer rows than a look's: the programme looks once, the read-back at its start; it
    once looked at its last row too (r = 0, counted from the end), throwing away a finished answer."""
    clock = iter(range(1, 10**6))
    monkeypatch.setattr(sorted_band, "perf_counter", lambda: next(clock))
    x = y = np.arange(3.0)[:, None]
    cols = sorted_band.band_pairs(x, y, "cityblock", 2.0, 1.0, timeout=2.5, began=0.0)  # looks at 1 and 2
    assert cols.tolist() == [0, 1, 2]


def test_the_report_names_the_band(rng):
    report = lapcli.solve_points(rng.random((70, 1)), rng.random((50, 1))).report
    assert "in order to part of the larger" in report.reason
    assert [step.name for step in report.steps] == ["sort both sets", "pairs in order over the band (host)",
                                                    "duals along chains of pairs"]
    assert report.steps[1].count == sorted_band.band_cells(50, 70)


def test_the_cli_matches_a_1d_rectangle(rng, tmp_path):
    a, b = rng.random((40, 1)), rng.random((65, 1))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    out = tmp_path / "pairs.csv"
    done = run_cli(["solve", "--points", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--metric", "cityblock",
                    "-o", str(out), "-q"])
    assert done.returncode == 0, done.stderr
    pairs = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
    cost = cdist(a, b, "cityblock")
    assert cost[pairs[:, 0], pairs[:, 1]].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_the_band_stays_on_the_host_when_small_or_without_cuda(monkeypatch):
    """The GPU's programme (lapcli.cuda.sorted_band) from DEVICE_BAND_FROM cells, below 2^30
    columns, and only where CUDA runs."""
    from lapcli.cuda import probe
    from lapcli.engines.cpu import sorted_points

    assert not sorted_points.band_on_device(50, 70)
    k = 4096
    assert sorted_band.band_cells(k, 2 * k) >= sorted_points.DEVICE_BAND_FROM
    monkeypatch.setattr(probe, "search_kernel_status", lambda: (False, "no CUDA device"))
    assert not sorted_points.band_on_device(k, 2 * k)
    # the kernel's int indices: 2^31 columns wrapped negative, and a warp's segment end near them
    monkeypatch.setattr(probe, "search_kernel_status", lambda: (True, "a CUDA device"))
    assert not sorted_points.band_on_device(1, sorted_points.DEVICE_BAND_COLUMNS)


def test_a_named_device_is_the_one_asked_for_room(rng, monkeypatch):
    """``device=`` is where the band would run, so its memory and capability decide it (and the
    route before it): both are asked inside that device's context."""
    import contextlib

    from lapcli import pipeline_points
    from lapcli.engines.cpu import sorted_points

    current = [None]

    @contextlib.contextmanager
    def on(device):
        current[0] = device
        yield
        current[0] = None

    asked = []
    monkeypatch.setattr(pipeline_points, "check_device", lambda device: None)
    monkeypatch.setattr(pipeline_points, "device_context", on)
    monkeypatch.setattr(sorted_points, "device_context", on)
    routed, placed = auto.points_route, sorted_points.band_on_device
    monkeypatch.setattr(auto, "points_route", lambda *args: asked.append(("route", current[0])) or routed(*args))
    monkeypatch.setattr(sorted_points, "band_on_device", lambda k, m: asked.append(("band", current[0])) or placed(k, m))
    x, y = rng.random((30, 1)), rng.random((45, 1))
    solution = lapcli.solve_points(x, y, device=1)
    assert asked == [("route", 1), ("band", 1)]
    cost = cdist(x, y, "sqeuclidean")
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
