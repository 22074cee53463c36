"""Engine ``sorted`` (lapcli.engines.cpu.sorted_points): two 1-D point sets of equal size matched
in sorted order, on the CPU: scipy's optimum on cdist's matrix for every metric, both senses,
ties and negative coordinates; duals that prove it; where auto sends 1-D sets; its refusals; the
host certificate's budget and time limit."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.bench.runner import bench_solvers
from lapcli import points_certificate
from lapcli.engines.cpu import sorted_points
from lapcli.errors import LapInputError, SolverError
from lapcli.points import distance_matrix, prepare_points

from .test_points import CASES, assert_certified_duals, run_cli, scipy_cdist


def line_sets(rng, n, kind):
    """(a, b), n 1-D points each: uniform, apart, or integers of a small range (many ties)."""
    if kind == "ties":
        return rng.integers(-3, 4, (n, 1)).astype(float), rng.integers(-2, 5, (n, 1)).astype(float)
    a = rng.normal(size=(n, 1))
    return a, rng.random((n, 1)) * 3 + (5.0 if kind == "apart" else -1.5)


@pytest.mark.parametrize("kind", ["uniform", "apart", "ties"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("metric, p", CASES)
def test_sorted_pairs_are_scipy_s_optimum(rng, metric, p, maximize, kind):
    """auto sends square 1-D sets to ``sorted``: its objective is scipy's on cdist's matrix, the
    answer certified, and its duals prove it on that matrix."""
    a, b = line_sets(rng, 257, kind)
    if metric == "cosine":  # cosine is undefined for zero vectors
        a, b = a + (a == 0), b + (b == 0)
    solution = lapcli.solve_points(a, b, metric, p=p, maximize=maximize)
    cost = scipy_cdist(a, b, metric, p)
    assert solution.report.solver == "sorted" and solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12, abs=1e-9)
    assert sorted(solution.col_ind) == list(range(257)) and list(solution.row_ind) == list(range(257))
    assert_certified_duals(solution, a, b, metric, p, maximize)


@pytest.mark.parametrize("n", [1, 2, 3, 40])
def test_small_and_one_point_sets(rng, n):
    a, b = rng.random((n, 1)), rng.random((n, 1))
    solution = lapcli.solve_points(a, b)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.report.solver == "sorted" and solution.report.certified
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_the_report_names_the_route_and_its_steps(rng):
    a, b = line_sets(rng, 100, "uniform")
    report = lapcli.solve_points(a, b).report
    assert "1-D sets of equal size" in report.reason and "sorted order" in report.details["costs"]
    assert [step.name for step in report.steps] == ["sort both sets", "duals along the sorted pairs"]
    assert report.certificate["where"] == "host"


@pytest.mark.parametrize("shape", [(30, 30, 2), (30, 40, 2)])
def test_auto_sends_other_sets_elsewhere_and_sorted_refuses_them(rng, shape):
    """2-D sets: auto's other routes, and a one-line LapInputError from ``solver="sorted"`` (1-D
    rectangles: tests/test_points_band.py)."""
    n, m, dim = shape
    a, b = rng.random((n, dim)), rng.random((m, dim))
    solution = lapcli.solve_points(a, b, solver="auto")
    cost = distance_matrix(a, b, "sqeuclidean")
    assert solution.report.solver != "sorted"
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    with pytest.raises(LapInputError, match="two 1-D point sets; these are 30 and"):
        lapcli.solve_points(a, b, solver="sorted")


def test_a_matrix_is_refused(rng, tmp_path):
    """``sorted`` needs coordinates: a matrix gets a one-line error, from the API and the CLI
    (exit code 2, no output file), and the matrix benches leave it out."""
    with pytest.raises(LapInputError, match="matches point sets"):
        lapcli.solve(rng.random((5, 5)), solver="sorted")
    np.save(tmp_path / "m.npy", rng.random((5, 5)))
    done = run_cli(["solve", tmp_path / "m.npy", "--solver", "sorted", "-o", tmp_path / "out.json"])
    assert done.returncode == 2 and "matches point sets" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out.json").exists()
    assert "sorted" not in bench_solvers() and "scipy" in bench_solvers()


def test_the_cli_matches_1d_point_files(rng, tmp_path):
    a, b = line_sets(rng, 50, "apart")
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    done = run_cli(["solve", "--points", tmp_path / "a.npy", tmp_path / "b.npy", "-o", tmp_path / "pairs.csv"])
    assert done.returncode == 0, done.stderr
    assert "sorted's steps" in done.stderr and "Hungarian" not in done.stderr  # its own phases' table
    pairs = np.loadtxt(tmp_path / "pairs.csv", delimiter=",", skiprows=1, dtype=np.int64)
    cost = distance_matrix(a, b, "sqeuclidean")
    assert cost[pairs[:, 0], pairs[:, 1]].sum() == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_the_host_certificate_s_budget(rng, monkeypatch):
    """By default the host pass reads at most HOST_CERTIFY_PAIRS costs: past it the answer comes
    without a certificate (and without duals), saying why; certify=True reads them all; False none."""
    a, b = line_sets(rng, 60, "uniform")
    monkeypatch.setattr(sorted_points, "HOST_CERTIFY_PAIRS", 59 * 60)
    skipped = lapcli.solve_points(a, b)
    assert not skipped.report.certified and skipped.duals is None
    assert "certify=True runs it" in skipped.report.certificate["why"]
    forced = lapcli.solve_points(a, b, certify=True)
    assert forced.report.certified and forced.duals is not None
    assert np.array_equal(forced.col_ind, skipped.col_ind)
    off = lapcli.solve_points(a, b, certify=False)
    assert not off.report.certified and off.duals is None
    monkeypatch.setattr(sorted_points, "HOST_CERTIFY_PAIRS", 60 * 60)
    assert lapcli.solve_points(a, b).report.certified


def test_the_host_certificate_honours_the_time_limit(rng, monkeypatch):
    """certify=True: a pass the limit stops is an error; by default, an answer without a certificate."""
    monkeypatch.setattr(points_certificate, "HOST_PASS_UP_TO", 1 << 40)  # the host's pass even beside a GPU
    a, b = line_sets(rng, 3000, "uniform")
    with pytest.raises(SolverError, match="certificate's pass ran past the time limit: 0 of 3,000 rows read"):
        lapcli.solve_points(a, b, certify=True, timeout=1e-6)
    # by default the pairs, optimal before the pass, come back uncertified (as the mirror route's)
    kept = lapcli.solve_points(a, b, timeout=1e-6)
    assert not kept.report.certified and kept.duals is None
    assert kept.report.certificate["why"].endswith("rows read (certify=True makes it an error)")
    assert np.array_equal(kept.col_ind, lapcli.solve_points(a, b, certify=False).col_ind)


@pytest.mark.parametrize("case", ["minkowski p = 50", "minkowski p = 200", "euclidean near 1e-160"])
def test_costs_whose_powers_underflow_go_elsewhere(rng, case):
    """cdist's (|d|^p)^(1/p) reads 0 for tiny d ≠ 0 (p = 50 below ~10⁻⁶), and such costs are not
    convex in d: the sorted pairs are not optimal (here 5.2e-6 against scipy's 5.0e-6, and on 300
    uniform points at p = 200), so auto leaves them to the matrix route and gets scipy's optimum."""
    if case == "euclidean near 1e-160":
        a, b = rng.random((40, 1)) * 1e-160, rng.random((40, 1)) * 1e-160
        metric, p = "euclidean", None
    elif case == "minkowski p = 50":
        a, b, metric, p = np.array([[0.0], [1e-6]]), np.array([[1.2e-6], [5e-6]]), "minkowski", 50.0
    else:
        a, b, metric, p = rng.random((300, 1)), rng.random((300, 1)), "minkowski", 200.0
    assert not prepare_points(a, b, metric, p=p).on_a_line
    with pytest.raises(LapInputError, match="powers of their differences underflow"):
        lapcli.solve_points(a, b, metric, p=p, solver="sorted")
    solution = lapcli.solve_points(a, b, metric, p=p)
    cost = scipy_cdist(a, b, metric, p)
    assert solution.report.solver != "sorted"
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-9)


def test_ordinary_powers_stay_on_the_line(rng):
    a, b = rng.random((300, 1)), rng.random((300, 1))
    assert all(prepare_points(a, b, metric, p=p).on_a_line for metric, p in CASES)
    assert not prepare_points(rng.random((300, 2)), rng.random((300, 2))).on_a_line


def test_the_host_pass_reads_every_chunk(rng, monkeypatch):
    """The host pass in chunks of a few rows finds the least reduced cost wherever it lies (planted
    in a middle chunk), as the whole matrix read at once does, maximising too."""
    monkeypatch.setattr(points_certificate, "HOST_CHUNK_PAIRS", 5 * 90)  # 5 rows a chunk
    for maximize in (False, True):
        a, b = line_sets(rng, 90, "uniform")
        problem = prepare_points(a, b, maximize=maximize)
        u, v = rng.normal(size=90), rng.normal(size=90)
        u[47] += 100.0  # row 47's reduced costs the least, in the 10th of 18 chunks
        x, y = np.asarray(problem.rows), np.asarray(problem.columns)
        whole = (problem.sign * distance_matrix(x, y, "sqeuclidean") - u[:, None] - v[None, :]).min()
        assert points_certificate._host_least_slack(problem, x, y, u, v, None, 0.0) == pytest.approx(whole, rel=1e-14)


@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("fault", ["columns unsorted", "duals shifted", "row duals lowered"])
def test_the_certificate_reads_every_pair(rng, monkeypatch, fault, maximize):
    """A wrong answer or wrong duals fail the host pass (a SolverError naming the engine), so the
    certificate guards the Monge argument rather than trusting it: every reduced cost feasible and
    the pairs' tight, minimised and maximised."""
    a, b = line_sets(rng, 200, "uniform")
    problem = prepare_points(a, b, maximize=maximize)
    if fault == "columns unsorted":
        real_argsort = np.argsort
        calls = []

        def argsort(values, kind=None):
            calls.append(1)
            order = real_argsort(values, kind=kind)
            return order[::-1].copy() if len(calls) == 2 else order  # the columns' order reversed

        monkeypatch.setattr(sorted_points.np, "argsort", argsort)
    elif fault == "duals shifted":
        real_cumsum = np.cumsum
        monkeypatch.setattr(sorted_points.np, "cumsum", lambda x: real_cumsum(x) + np.arange(len(x)) * 1e-3)
    else:  # the proved duals with every row's lowered by 1: all reduced costs ≥ 1, feasible, not tight
        proved = sorted_points.run_points(problem, certify=True)
        u, v = (problem.sign * dual for dual in proved.duals)  # the work's, which minimises sign · c
        with pytest.raises(SolverError, match="sorted engine's answer failed its optimality certificate"):
            sorted_points._certified(problem, proved.cols, u - 1.0, v, None, 0.0, None, True, {})
        return
    with pytest.raises(SolverError, match="sorted engine's answer failed its optimality certificate"):
        sorted_points.run_points(problem, certify=True)
