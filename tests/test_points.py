"""Point sets (lapcli.solve_points, lapcli.points): every metric against scipy's cdist and
linear_sum_assignment, the orientation and duals, bad input, the CLI. These run on the CPU (the
cdist route); tests/test_points_gpu.py runs the same rules on the implicit-cost kernel."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa
from scipy.spatial.distance import cdist

import lapcli
from lapcli.errors import LapInputError
from lapcli.points import METRICS, costs, distance_matrix, prepare_points


def run_cli(args, cwd=None):
    """``lap ARGS`` as a process: its exit code and its stderr as the shell sees them."""
    return subprocess.run([sys.executable, "-m", "lapcli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, check=False)


CASES = [("sqeuclidean", None), ("euclidean", None), ("cityblock", None), ("chebyshev", None),
         ("minkowski", 3.0), ("cosine", None)]


def scipy_cdist(a, b, metric, p):
    return cdist(a, b, metric, p=p) if metric == "minkowski" else cdist(a, b, metric)


def assert_certified_duals(solution, a, b, metric, p, maximize=False):
    """The returned duals prove the returned pairs optimal on cdist's own matrix."""
    cost = scipy_cdist(a, b, metric, p)
    u, v = solution.duals
    slack = cost - u[:, None] - v[None, :]
    tol = 1e-9 * max(1.0, np.abs(cost).max())
    if maximize:
        slack = -slack
    assert slack.min() >= -tol
    assert np.abs(slack[solution.row_ind, solution.col_ind]).max() <= tol


@pytest.mark.parametrize("metric, p", CASES)
@pytest.mark.parametrize("shape", [(1, 1), (40, 40), (60, 90), (90, 60)])
def test_every_metric_matches_scipy_on_the_cdist_matrix(rng, metric, p, shape):
    n, m = shape
    d = int(rng.integers(1, 6))
    a, b = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    solution = lapcli.solve_points(a, b, metric, p=p, certify=True)
    cost = scipy_cdist(a, b, metric, p)
    rows, cols = scipy_lsa(cost)
    assert solution.objective == pytest.approx(cost[rows, cols].sum(), rel=1e-12, abs=1e-12)
    assert len(solution.row_ind) == min(n, m) and np.all(np.diff(solution.row_ind) > 0)
    assert len(set(solution.col_ind.tolist())) == min(n, m)
    assert solution.report.certified
    assert_certified_duals(solution, a, b, metric, p)


@pytest.mark.parametrize("shape", [(50, 50), (30, 70), (70, 30)])
def test_maximize_matches_scipy(rng, shape):
    a, b = rng.random((shape[0], 3)), rng.random((shape[1], 3))
    solution = lapcli.solve_points(a, b, "euclidean", maximize=True, certify=True)
    cost = cdist(a, b, "euclidean")
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=True)].sum(), rel=1e-12)
    assert_certified_duals(solution, a, b, "euclidean", None, maximize=True)


def test_the_reference_costs_are_cdists(rng):
    """costs() is what the kernels compute and what the dense route solves: cdist's values."""
    a, b = rng.normal(size=(30, 7)), rng.normal(size=(40, 7))
    for metric, p in CASES:
        x, y = (a, b) if metric != "cosine" else (a / np.linalg.norm(a, axis=1)[:, None],
                                                  b / np.linalg.norm(b, axis=1)[:, None])
        np.testing.assert_allclose(distance_matrix(x, y, metric, p or 2.0), scipy_cdist(a, b, metric, p),
                                   rtol=1e-13, atol=1e-13)
        np.testing.assert_array_equal(costs(x[:5], y[:5], metric, p or 2.0),
                                      np.diagonal(distance_matrix(x[:5], y[:5], metric, p or 2.0)))


@pytest.mark.parametrize("metric", METRICS)
def test_the_tolerance_scale_bounds_every_cost(rng, metric):
    """largest_cost() comes from the bounding boxes alone and must bound every |c(i, j)|."""
    a, b = rng.normal(size=(80, 4)) * 3, rng.normal(size=(70, 4)) + 5
    problem = prepare_points(a, b, metric, p=1.5 if metric == "minkowski" else None)
    assert problem.largest_cost() >= np.abs(problem.dense()).max() * (1 - 1e-12)


@pytest.mark.parametrize("p, named", [(1, "cityblock"), (2, "euclidean"), (math.inf, "chebyshev"), (1.5, "minkowski")])
def test_minkowski_norms_with_their_own_names_use_them(rng, p, named):
    a, b = rng.random((20, 2)), rng.random((25, 2))
    assert prepare_points(a, b, "minkowski", p=p).metric == named
    solution = lapcli.solve_points(a, b, "minkowski", p=p)
    cost = cdist(a, b, "minkowski", p=p)
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


@pytest.mark.parametrize("p", [0.3, 0.5, 0.9])
@pytest.mark.parametrize("shape", [(30, 1, 30), (40, 2, 40), (25, 3, 35), (35, 2, 20)])
def test_minkowski_below_1_is_cdists_and_certified(rng, p, shape):
    """p in (0, 1), which cdist computes (not a norm): the dense solve's objective, duals proved on
    cdist's own matrix, in 1-D too (not sorted's: see along_a_line)."""
    n, d, m = shape
    a, b = rng.random((n, d)), rng.random((m, d))
    assert not prepare_points(a, b, "minkowski", p=p).along_a_line
    cost = cdist(a, b, "minkowski", p=p)
    for maximize in (False, True):
        solution = lapcli.solve_points(a, b, "minkowski", p=p, maximize=maximize)
        assert solution.report.certified
        assert solution.objective == pytest.approx(cost[scipy_lsa(cost, maximize=maximize)].sum(), rel=1e-12)
        assert_certified_duals(solution, a, b, "minkowski", p, maximize=maximize)


def test_minkowski_below_1_widens_the_tolerance_by_1_over_p(rng):
    """The device's pow and NumPy's differ by an ulp or two, scaled by 1/p in the outer pow: a
    certificate read on the host from device duals must allow that (kernels/costs.cuh)."""
    from lapcli.work import float_eps

    a, b = rng.random((3, 16)), rng.random((5, 16))
    for p in (0.25, 0.5):
        problem = prepare_points(a, b, "minkowski", p=p)
        assert problem.tolerance() == pytest.approx(float_eps(20, problem.largest_cost()) / p)


def test_orientation_maps_work_answers_and_duals_back(rng):
    """A tall problem (n > m) is solved with b as the work's rows: solving the work matrix by hand
    and mapping back must give the caller's pairs and duals that certify on the caller's matrix."""
    a, b = rng.random((9, 2)), rng.random((5, 2))
    problem = prepare_points(a, b)
    assert problem.transposed and problem.rows is b
    work = distance_matrix(problem.rows, problem.columns, problem.metric)
    solution = lapcli.solve(work)  # scipy: certified duals of the work problem
    col_of_row = np.empty(5, dtype=np.int64)
    col_of_row[solution.row_ind] = solution.col_ind
    rows, cols = problem.assignment_from_work(col_of_row)
    assert np.all(np.diff(rows) > 0) and sorted(cols.tolist()) == list(range(5))
    u, v = problem.duals_from_work(*solution.duals)
    cost = cdist(a, b, "sqeuclidean")
    assert (cost - u[:, None] - v[None, :]).min() >= -1e-12
    assert np.allclose(cost[rows, cols], u[rows] + v[cols])


def test_float32_integer_and_list_coordinates_are_taken(rng):
    a = rng.random((30, 2)).astype(np.float32)
    b = (rng.random((30, 2)) * 100).astype(np.int64)
    solution = lapcli.solve_points(a, b.tolist())
    cost = cdist(a.astype(np.float64), b.astype(np.float64), "sqeuclidean")
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_torch_cpu_tensors_are_taken(rng):
    torch = pytest.importorskip("torch")
    a, b = rng.random((30, 3)), rng.random((40, 3))
    solution = lapcli.solve_points(torch.from_numpy(a), torch.from_numpy(b).float())
    cost = cdist(a, b.astype(np.float32).astype(np.float64), "sqeuclidean")
    assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0)])
def test_an_empty_set_gives_an_empty_answer(shape):
    solution = lapcli.solve_points(np.zeros((shape[0], 2)), np.zeros((shape[1], 2)))
    assert solution.row_ind.size == solution.col_ind.size == 0 and solution.objective == 0
    u, v = solution.duals  # zeros, so that --duals writes them as for any answer (it was exit 1)
    assert (u.tolist(), v.tolist()) == ([0.0] * shape[0], [0.0] * shape[1])
    matrix = lapcli.solve(np.zeros(shape, dtype=np.int32))
    assert [d.tolist() for d in matrix.duals] == [[0] * shape[0], [0] * shape[1]] and matrix.duals[0].dtype == np.int64


@pytest.mark.parametrize("a, b, kwargs, message", [
    (np.zeros(4), np.zeros((4, 1)), {}, "a is 1-D"),
    ([[1.0, 2.0], [3.0]], [[1.0, 2.0]], {}, "a is not an .n, d. array: its points differ in length"),
    (np.zeros((3, 2)), np.zeros((3, 2)) + 3, {"metric": "cityblock", "solver": "bogus"}, "unknown solver 'bogus'; [^(]*$"),
    (np.zeros((2, 2, 2)), np.zeros((4, 2)), {}, "3-D"),
    (np.zeros((4, 2)), np.zeros((4, 3)), {}, "must match"),
    (np.zeros((4, 1)), np.zeros((4, 3)), {}, "^a has 1 coordinate a point and b has 3; they must match$"),
    (np.array([[0.0, np.nan]]), np.zeros((1, 2)), {}, "NaN or infinite"),
    (np.zeros((1, 2)), np.array([[np.inf, 0.0]]), {}, "NaN or infinite"),
    (np.zeros((1, 2)), np.array([[1.0, 0.0]], dtype=np.longdouble) * np.longdouble(10) ** 400, {},
     "beyond float64's range"),
    (np.zeros((3, 40)), np.zeros((3, 40)), {}, "1 to 32"),
    (np.array([["x", "y"]]), np.zeros((1, 2)), {}, "give numbers"),
    (np.zeros((2, 2)), np.ones((2, 2)), {"metric": "cosine"}, "origin"),
    (np.ones((2, 2)), np.ones((2, 2)), {"metric": "hamming"}, "unknown metric"),
    (np.ones((2, 2)), np.ones((2, 2)), {"metric": "minkowski", "p": 0.0}, "p > 0"),
    (np.ones((2, 2)), np.ones((2, 2)), {"metric": "minkowski", "p": -1}, "p > 0"),
    (np.ones((2, 2)), np.ones((2, 2)), {"metric": "minkowski", "p": 10**400}, "past float64's range"),
    (np.ones((2, 2)), np.ones((2, 2)), {"metric": "euclidean", "p": 3}, "takes none"),
    (np.ones((2, 2)), np.ones((2, 2)), {"metric": "minkowski", "p": np.array([3.0])}, "a number p > 0, not array"),
    (np.ones((2, 2)), np.ones((2, 2)), {"metric": ["euclidean"]}, "unknown metric"),
    (np.ones((2, 2)), np.ones((2, 2)), {"solver": ["scipy"]}, r"unknown solver \['scipy'\]"),
    (np.ones((2, 2)), np.ones((2, 2)), {"names": None}, "names must be two strings"),
    (np.ones((2, 2)), np.ones((2, 2)), {"names": ("a",)}, "names must be two strings"),
    (np.ones((2, 2)), np.ones((2, 2)), {"solver": "cuda-batch"}, "solves stacks"),
    # a pair whose distance overflows float64 read as forbidden, silently
    (np.array([[0.0, 0.0], [7.5e153, 9e153]]), np.array([[1.5e154, 0.0], [7.5e153, 9e153]]), {"metric": "euclidean"},
     "bounding box overflows float64"),
    (np.array([[0.0], [1e103]]), np.array([[1e103], [0.0]]), {"metric": "minkowski", "p": 3}, "bounding box overflows float64"),
    # p, not the coordinates: (Σ|x|^p)^(1/p) over 3 unit coordinates is 3^1000 at p = 0.001
    (np.zeros((2, 3)), np.ones((2, 3)), {"metric": "minkowski", "p": 1e-3}, "with p = 0.001 .* a larger p keeps it finite$"),
    # p again, above 1: a side of 10 to the 1000th power (cdist's distance is inf there)
    (np.zeros((2, 2)), np.full((2, 2), 10.0), {"metric": "minkowski", "p": 1000},
     "with p = 1000 .* a smaller p, or coordinates scaled down, keeps it finite$"),
    # ...but not where the box's widest side overflows whatever p is
    (np.array([[-1e308], [0.0]]), np.array([[1e308], [0.0]]), {"metric": "minkowski", "p": 0.5}, "scale them down$"),
])
def test_bad_input_is_one_line(a, b, kwargs, message):
    with pytest.raises(LapInputError, match=message) as raised:
        lapcli.solve_points(a, b, **kwargs)
    assert "\n" not in str(raised.value)


def test_metric_names_in_any_case_and_p_as_a_0_d_array_are_cdist_s(rng):
    """scipy's cdist lowers the metric's name and takes p as a 0-d array: so does solve_points."""
    torch = pytest.importorskip("torch")
    a, b = rng.random((30, 3)), rng.random((30, 3))
    for metric, p in (("Euclidean", None), ("MINKOWSKI", np.array(3.0)), ("minkowski", torch.tensor(3.0))):
        cost = cdist(a, b, metric, **({} if p is None else {"p": p}))
        solution = lapcli.solve_points(a, b, metric, p=p)
        assert solution.objective == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_the_command_line_takes_a_metric_s_name_in_any_case(rng, tmp_path):
    from click.testing import CliRunner

    from lapcli.cli.main import cli

    a, b = rng.random((20, 2)), rng.random((20, 2))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    result = CliRunner().invoke(cli, ["solve", "--points", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"),
                                      "--metric", "CityBlock", "--json"])
    cost = cdist(a, b, "cityblock")
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == pytest.approx(cost[scipy_lsa(cost)].sum())


def test_text_coordinates_are_read_as_cdist_reads_them(tmp_path):
    """Text point sets: integers past 64 bits are coordinates in float64 (as cdist computes), not
    costs lapcli holds exactly or refuses; a value past float64's range is refused in point words."""
    from click.testing import CliRunner

    from lapcli.cli.main import cli

    (tmp_path / "a.txt").write_text("0 0\n1 1\n")
    (tmp_path / "wide.txt").write_text("123456789012345678901234 0\n-5 1\n")
    (tmp_path / "over.txt").write_text("0 0\n1e400 1\n")
    result = CliRunner().invoke(cli, ["solve", "--points", str(tmp_path / "a.txt"), str(tmp_path / "wide.txt"),
                                      "--json", "-q"])
    cost = cdist([[0, 0], [1, 1]], [[123456789012345678901234.0, 0], [-5, 1]], "sqeuclidean")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["objective"] == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    refused = CliRunner().invoke(cli, ["solve", "--points", str(tmp_path / "a.txt"), str(tmp_path / "over.txt")])
    assert refused.exit_code == 2 and refused.stderr.strip().endswith(
        "over.txt holds a value beyond float64's range (±1.8e308), which point costs are computed in")


def test_a_first_coordinate_of_0_1_2_under_a_header_is_a_coordinate(tmp_path):
    """A point file whose first column counts 0, 1, … (a frame index, a grid) under a header is a
    coordinate, as the read takes it and stdin's same bytes are read: the head check refused it as
    pandas' index and advised --index-col, which drops it (objective 0.045, not 1.015)."""
    from click.testing import CliRunner

    from lapcli.cli.main import cli

    first, second = np.array([[0, 0.5], [1, 0.25], [2, 0.75], [3, 0.1]]), np.array([[0, 0.3], [1, 0.9], [2, 0.2], [3, 0.6]])
    for name, points in (("a.csv", first), ("b.csv", second)):
        (tmp_path / name).write_text("t,pos\n" + "".join(f"{int(t)},{x}\n" for t, x in points))
    result = CliRunner().invoke(cli, ["solve", "--points", str(tmp_path / "a.csv"), str(tmp_path / "b.csv"), "--json",
                                      "-q"])
    cost = cdist(first, second, "sqeuclidean")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["objective"] == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


def test_the_report_names_minkowski_with_its_p(rng):
    """The costs depend on p: the report's words for them carry it (a run is reproducible from them)."""
    a, b = rng.random((5, 2)), rng.random((7, 2))
    for sets, words in (((a, b), "minkowski (p = 3) as a 5 × 7 cdist matrix"),
                        ((a[:, :1], b[:, :1]), "minkowski (p = 3) between 1-D points")):
        assert lapcli.solve_points(*sets, "minkowski", p=3).report.details["costs"].startswith(words)
    assert lapcli.solve_points(a, b, "euclidean").report.details["costs"].startswith("euclidean as a")
    assert lapcli.solve_points(a, b, "minkowski", p=3.14159265).report.details["costs"].startswith(
        "minkowski (p = 3.14159265) as a")


def test_point_files_that_are_no_point_set_are_refused_in_their_own_words(tmp_path):
    """A named 3-D dataset needs no advice to name one; a directory or an HDF5 file without a 2-D
    dataset is not called a matrix file."""
    import h5py
    from click.testing import CliRunner

    from lapcli.cli.main import cli

    (tmp_path / "a.txt").write_text("0 0\n1 1\n")
    with h5py.File(tmp_path / "s.h5", "w") as handle:
        handle["x"], handle["line"] = np.zeros((2, 3, 2)), np.zeros(3)
    (tmp_path / "d.npy").mkdir()
    for spec, words in (("s.h5:/x", "s.h5:/x names a 3-D array or a group of arrays (a batch): a point set is one "
                                    "2-D array, one point a row"),
                        ("d.npy", "d.npy is a directory, not a file")):
        result = CliRunner().invoke(cli, ["solve", "--points", str(tmp_path / spec), str(tmp_path / "a.txt")])
        assert result.exit_code == 2 and result.stderr.strip().endswith(words), result.output
    with h5py.File(tmp_path / "s.h5", "w") as handle:
        handle["line"] = np.zeros(3)
    result = CliRunner().invoke(cli, ["solve", "--points", str(tmp_path / "s.h5"), str(tmp_path / "a.txt")])
    assert result.exit_code == 2 and "holds no 2-D dataset (a matrix, or a point set)" in result.stderr


@pytest.mark.parametrize("solver", ["cuda", "cuda-sap", "lapx"])
def test_a_solver_that_cannot_run_here_is_refused_for_empty_sets_too(solver):
    """Empty sets once returned at once under any name (report.solver "cuda" on a machine without
    CUDA); they are refused as a matrix is, where the engine cannot run."""
    from lapcli.engines import registry
    from lapcli.errors import SolverUnavailable

    a, b = np.zeros((0, 2)), np.ones((3, 2))
    if registry.get(solver).available()[0]:
        assert lapcli.solve_points(a, b, solver=solver).report.solver == solver
    else:
        with pytest.raises(SolverUnavailable, match="cannot run here"):
            lapcli.solve_points(a, b, solver=solver)


@pytest.mark.parametrize("scale", [1e155, 1e-200])
def test_cosine_takes_any_scale_of_coordinates(rng, scale):
    """cosine does not depend on a point's length: 1e155 coordinates once squared to inf (every
    point then the origin's, every cost 1: a wrong answer, certified), 1e-200 ones to 0 (refused as
    "a point at the origin")."""
    a, b = rng.normal(size=(30, 3)), rng.normal(size=(30, 3))
    expected = lapcli.solve_points(a, b, "cosine")
    scaled = lapcli.solve_points(a * scale, b * scale, "cosine")
    assert scaled.report.certified and scaled.col_ind.tolist() == expected.col_ind.tolist()
    assert scaled.objective == pytest.approx(expected.objective, rel=1e-12, abs=1e-12)


def test_costs_near_the_float_range_keep_a_finite_tolerance():
    """Squared distances near 1e307: k · spread · 2^-50 overflowed to an infinite tolerance, which
    certified anything (or failed the recovery with NaN, "a bug"); the spread is scaled first."""
    a = np.array([[1.0760133719665743e154], [5.3195887727990964e153], [7.144717939749774e153]])
    b = np.array([[3.5826847215988874e152], [9.795670412772485e153]])
    for maximize in (False, True):
        solution = lapcli.solve_points(a, b, maximize=maximize)
        rows, cols = scipy_lsa(cdist(a, b, "sqeuclidean"), maximize=maximize)
        assert solution.report.certified and math.isfinite(solution.report.certificate["tolerance"])
        assert solution.objective == cdist(a, b, "sqeuclidean")[rows, cols].sum()


@pytest.mark.filterwarnings("error")  # the band's sums past the range warned on stderr
@pytest.mark.parametrize("shape", ["square 1-D", "rectangle 1-D", "square 2-D", "rectangle 2-D"])
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("solver", ["auto", "numpy", "scipy"])
def test_a_total_past_the_float_range_is_infinite_as_a_matrix_s(shape, maximize, solver):
    """Costs near 1.8e308 whose optimal total passes float64's range: objective inf, as solve() of
    the matrix gives, certified; fsum's OverflowError once escaped as a traceback (the 1-D routes)."""
    dims = 1 if "1-D" in shape else 2
    a = np.zeros((2, dims))
    a[1, 0] = 1.0
    b = np.zeros((3 if "rectangle" in shape else 2, dims))
    b[:2, 0] = [1.7e308, 1.6e308]
    solution = lapcli.solve_points(a, b, "cityblock", maximize=maximize, solver=solver)
    dense = lapcli.solve(cdist(a, b, "cityblock"), maximize=maximize, solver="scipy")
    assert solution.report.certified and solution.objective == dense.objective
    assert math.isinf(solution.objective) == (maximize or "square" in shape)


@pytest.mark.filterwarnings("error")  # the dual recovery's distances past the range warned on stderr
@pytest.mark.parametrize("maximize", [False, True])
@pytest.mark.parametrize("m", [2, 3])
def test_sets_on_a_line_whose_totals_overflow_are_not_sorted(maximize, m):
    """±8e307 on a line: the band programme ranked infinite sums as equal and picked pairs whose chained
    duals failed the certificate ("a bug, please report it"); such sets take the matrix route."""
    a, b = np.array([[-8e307], [8e307]]), np.array([[-8e307], [8e307], [0.0]])[:m]
    solution = lapcli.solve_points(a, b, "cityblock", maximize=maximize)
    rows, cols = scipy_lsa(cdist(a, b, "cityblock"), maximize=maximize)
    with np.errstate(over="ignore"):  # scipy's total, inf where it passes the range
        expected = cdist(a, b, "cityblock")[rows, cols].sum()
    assert solution.objective == expected and solution.report.solver != "sorted"
    with pytest.raises(LapInputError, match="pass float64's range"):
        lapcli.solve_points(a, b, "cityblock", maximize=maximize, solver="sorted")


def test_without_a_points_engine_auto_solves_the_matrix(rng, monkeypatch):
    """auto's rule: above 2048 points a side with clusters, the implicit engine; otherwise the
    matrix, through the matrix rules (named 'auto' until they choose)."""
    from lapcli.engines import auto

    problem = prepare_points(rng.random((3000, 2)), rng.random((10, 2)))
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (True, "Hopper"))
    assert auto.choose_points(problem)[0] == "cuda-sap"
    assert auto.choose_points(prepare_points(rng.random((100, 2)), rng.random((2048, 2))))[0] == "auto"
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (False, "no GPU"))
    name, reason = auto.choose_points(problem)
    assert name == "auto" and "no GPU" in reason
    assert auto.choose_points(problem, "scipy") == ("scipy", "requested (costs as a cdist matrix)")
    from lapcli.engines import registry
    from lapcli.errors import SolverUnavailable

    if registry.get("cuda-sap").available()[0]:
        assert auto.choose_points(problem, "cuda-sap")[1] == "requested (costs computed from the coordinates)"
    else:  # a requested engine that cannot run here is refused at once, as for a matrix
        with pytest.raises(SolverUnavailable, match="cannot run here"):
            auto.choose_points(problem, "cuda-sap")


def test_auto_sends_squares_to_the_auction_without_the_clusters_column_limit(rng, monkeypatch):
    """A minimised square above 2048 points goes to cuda-sap's auction, which has no column limit:
    auto asks only for Hopper (columns = 0); a rectangle's searches, and a maximised square's, must
    fit a cluster (its columns asked)."""
    from lapcli.engines import auto

    asked = []

    def status(columns=0):
        asked.append(columns)
        return (columns <= 55296, "Hopper" if columns <= 55296 else "a cluster holds 55296 columns")

    monkeypatch.setattr(auto, "cluster_kernel_status", status)
    square = prepare_points(rng.random((60000, 2)), rng.random((60000, 2)))
    assert auto.choose_points(square)[0] == "cuda-sap" and asked == [0]
    wide = prepare_points(rng.random((3000, 2)), rng.random((60000, 2)))
    assert auto.choose_points(wide)[0] == "auto" and asked[-1] == 60000
    farthest = prepare_points(rng.random((60000, 2)), rng.random((60000, 2)), maximize=True)
    assert auto.choose_points(farthest)[0] == "auto" and asked[-1] == 60000
    farthest = prepare_points(rng.random((5000, 2)), rng.random((5000, 2)), maximize=True)
    assert auto.choose_points(farthest)[0] == "cuda-sap" and asked[-1] == 5000


def test_auto_builds_a_small_squares_matrix_on_the_gpu(rng, monkeypatch):
    """Minimised squares of 2049 to 4,096 points with Hopper and room for twice the float64
    matrix: the cdist matrix built on the GPU (named 'auto' for the matrix rules); larger squares,
    rectangles, maximised squares, or too little memory: the costs from the coordinates."""
    from lapcli.engines import auto

    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (True, "Hopper"))
    room = [64 << 30]
    monkeypatch.setattr(auto, "free_device_bytes", lambda: room[0])
    points = lambda n, m=None, **kwargs: prepare_points(rng.random((n, 2)), rng.random((m or n, 2)), **kwargs)  # noqa: E731
    name, reason = auto.choose_points(points(3000))
    assert name == "auto" and "built on the GPU" in reason
    assert auto.points_matrix_on_device(points(auto.POINTS_DEVICE_MATRIX_UP_TO))
    assert auto.choose_points(points(auto.POINTS_DEVICE_MATRIX_UP_TO + 1))[0] == "cuda-sap"
    assert auto.choose_points(points(8192))[0] == "cuda-sap"  # clustered sets there: 1.0-7.5 s and 5 of 12 past 8 s by the matrix
    assert auto.choose_points(points(3000, 2500))[0] == "cuda-sap"  # a rectangle: the cluster searches
    assert auto.choose_points(points(3000, maximize=True))[0] == "cuda-sap"
    small = auto.choose_points(points(2048))
    assert small[0] == "auto" and "built on the GPU" not in small[1] and not auto.points_matrix_on_device(points(2048))
    room[0] = 2 * 8 * 3000 * 3000 - 1
    assert auto.choose_points(points(3000))[0] == "cuda-sap"
    room[0] = 64 << 30
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (False, "no GPU"))
    assert not auto.points_matrix_on_device(points(3000))


def test_a_gpu_matrix_that_does_not_fit_falls_back_to_the_coordinates(rng, monkeypatch):
    """auto's route to a GPU-built matrix, when the allocation fails (another process took the
    room since the check): the point engine solves from the coordinates, and the report says why."""
    from scipy.optimize import linear_sum_assignment

    from lapcli import pipeline_points
    from lapcli.engines import auto
    from lapcli.engines.base import EngineResult

    a, b = rng.random((40, 2)), rng.random((40, 2))
    cost = distance_matrix(a, b, "sqeuclidean")
    asked = []

    class PointEngine:  # stands in for cuda-sap's run_points
        @staticmethod
        def run_points(problem, **kwargs):
            asked.append(problem.n_rows)
            rows, cols = linear_sum_assignment(cost)
            return EngineResult(rows=rows, cols=cols, device="stand-in", dtype="float64")

    monkeypatch.setattr(auto, "points_route", lambda problem, solver: ("auto", "auto: the GPU matrix", True))
    monkeypatch.setattr(pipeline_points, "_device_matrix", lambda problem, device: None)
    monkeypatch.setattr(pipeline_points, "loaded_engine", lambda engine: (PointEngine, 0.0))
    solution = lapcli.solve_points(a, b)
    assert asked == [40] and solution.report.solver == "cuda-sap"
    assert "no room" in solution.report.reason
    assert solution.objective == pytest.approx(cost[linear_sum_assignment(cost)].sum())


def test_generate_points_is_reproducible_and_clusters():
    from lapcli.generate import generate_points

    first, again = generate_points(500, 3, seed=7), generate_points(500, 3, seed=7)
    assert first.shape == (500, 3) and np.array_equal(first, again) and 0 <= first.min() and first.max() < 1
    clustered = generate_points(2000, 2, kind="clustered", seed=7, dtype="float32")
    assert clustered.dtype == np.float32
    # 16 tight clusters: the mean distance to the nearest other point is far below uniform's
    nearest = np.sort(cdist(clustered[:500], clustered[:500]), axis=1)[:, 1].mean()
    uniform = np.sort(cdist(first[:500, :2], first[:500, :2]), axis=1)[:, 1].mean()
    assert nearest < uniform / 2
    # another seed samples the same mixture: its points lie near the first set's clusters
    other = generate_points(500, 2, kind="clustered", seed=8)
    assert cdist(other, clustered).min(axis=1).mean() < uniform / 2
    with pytest.raises(LapInputError, match="point kind"):
        generate_points(5, kind="geometric")


def test_cli_generates_and_solves_points(tmp_path):
    a, b = tmp_path / "a.npy", tmp_path / "b.csv"
    assert run_cli(["generate", "--points", "--n", "60", "--d", "3", "--seed", "1", "-o", str(a)]).returncode == 0
    assert run_cli(["generate", "--points", "--n", "80", "--d", "3", "--kind", "clustered", "--seed", "2",
                    "-o", str(b)]).returncode == 0
    out, duals = tmp_path / "pairs.csv", tmp_path / "duals.npz"
    done = run_cli(["solve", "--points", str(a), str(b), "--metric", "cityblock", "-o", str(out), "--duals",
                    str(duals), "--json", "-q"])
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    x, y = np.load(a), np.loadtxt(b, delimiter=",", ndmin=2)
    cost = cdist(x, y, "cityblock")
    pairs = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.int64)
    assert report["objective"] == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    assert cost[pairs[:, 0], pairs[:, 1]].sum() == pytest.approx(report["objective"], rel=1e-12)
    assert report["certified"] and "cityblock" in report["details"]["costs"]
    with np.load(duals) as saved:
        assert (cost - saved["u"][:, None] - saved["v"][None, :]).min() >= -1e-9
    # p = inf is minkowski's chebyshev, on the command line as in the API
    done = run_cli(["solve", "--points", str(a), str(b), "--metric", "minkowski", "--p", "inf", "--json", "-q"])
    assert done.returncode == 0, done.stderr
    cost = cdist(x, y, "chebyshev")
    assert json.loads(done.stdout)["objective"] == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)
    # and p below 1, as cdist computes it
    done = run_cli(["solve", "--points", str(a), str(b), "--metric", "minkowski", "--p", "0.5", "--json", "-q"])
    assert done.returncode == 0, done.stderr
    cost = cdist(x, y, "minkowski", p=0.5)
    assert json.loads(done.stdout)["objective"] == pytest.approx(cost[scipy_lsa(cost)].sum(), rel=1e-12)


@pytest.mark.parametrize("args, message", [
    (["solve", "--points", "A", "B", "m.npy"], "not both"),
    (["solve", "--points", "A", "--metric", "cityblock", "B"], "it was given --metric as a file"),
    (["solve", "--points", "A", "-o", "x.npy", "B"], "it was given -o as a file"),
    (["solve", "--points", "A", "B", "--dtype", "int32"], "--dtype does not go with --points"),
    (["solve", "--points", "A", "B", "--cost-limit", "3"], "--cost-limit does not go with --points"),
    (["solve", "A", "--metric", "cosine"], "--metric goes with --points"),
    (["solve"], "missing INPUT"),
    (["generate", "--points", "--n", "5", "--batch", "2", "-o", "x.npy"], "--batch does not go with --points (one set a file)"),
    (["generate", "--n", "5", "--kind", "clustered", "-o", "x.npy"], "add --points"),
    (["generate", "--points", "--n", "5", "--d", "33", "-o", "x.npy"], "1<=x<=32"),  # what solve takes (MAX_DIM)
    (["generate", "--points", "--n", "5", "--range", "3", "-o", "x.npy"], "--range does not go with --points"),
    (["generate", "--points", "--n", "5", "--ragged", "-o", "x.npy"], "--ragged does not go with --points"),
    (["solve", "--points", "A", "B", "--metric", "minkowski", "--p", "nan"], "p > 0"),
    (["solve", "--points", "A", "B", "--metric", "minkowski", "--p", "0"], "--p"),
])
def test_cli_point_option_errors_are_one_line_exit_2(tmp_path, args, message):
    done = run_cli(args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "x.npy").exists()


def test_generate_s_coordinates_a_point_are_those_solve_takes():
    from lapcli.cli.main import generate_command
    from lapcli.points import MAX_DIM

    dim = next(param for param in generate_command.params if param.name == "dim")
    assert (dim.type.min, dim.type.max) == (1, MAX_DIM)  # shown in --help as [1<=x<=32]


@pytest.mark.parametrize("name, arrays, message", [
    ("two.npz", {"a": np.zeros((4, 2)), "b": np.zeros((4, 2))}, "two.npz is read as a batch (a 3-D array, several "
                                                                "arrays, or one named '0' as a batch's members are): a "
                                                                "point set is one 2-D array, one point a row; name one "
                                                                "array (FILE.npz:NAME, FILE.h5:/path/to/it)"),
    ("zero.npz", {"0": np.zeros((4, 2))}, "zero.npz is read as a batch (a 3-D array, several arrays, or one named '0'"),
    ("stack.npy", np.zeros((2, 4, 2)), "stack.npy is 3-D: a point set is one 2-D array"),
    ("line.npy", np.zeros(4), "line.npy is 1-D: a point set is one 2-D array")])
def test_cli_a_point_file_that_is_not_one_2d_array_is_named(tmp_path, name, arrays, message):
    path, b = tmp_path / name, tmp_path / "b.npy"
    np.savez(path, **arrays) if name.endswith(".npz") else np.save(path, arrays)
    np.save(b, np.zeros((4, 2)))
    done = run_cli(["solve", "--points", str(path), str(b), "-o", str(tmp_path / "x.npy")])
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "x.npy").exists()


def test_cli_an_hdf5_point_file_of_another_rank_is_not_called_a_cost_matrix(tmp_path):
    """A 1-D HDF5 dataset given to --points was refused as "a cost matrix must be 2-D"."""
    import h5py

    with h5py.File(tmp_path / "h.h5", "w") as handle:
        handle["v"] = np.arange(5.0)
    np.save(tmp_path / "b.npy", np.zeros((4, 1)))
    done = run_cli(["solve", "--points", f"{tmp_path / 'h.h5'}:/v", str(tmp_path / "b.npy")])
    assert done.returncode == 2 and "is 1-D; lapcli reads a 2-D array (a cost matrix, or a point set" in done.stderr
    assert "must be 2-D" not in done.stderr and done.stderr.count("\n") == 1


def test_cli_bad_point_file_names_it_and_writes_nothing(tmp_path):
    a, b = tmp_path / "a.npy", tmp_path / "b.npy"
    np.save(a, np.zeros((4, 2)))
    np.save(b, np.zeros((4, 3)))
    out = tmp_path / "pairs.csv"
    done = run_cli(["solve", "--points", str(a), str(b), "-o", str(out)])
    assert done.returncode == 2 and f"{a} has 2 coordinates a point and {b} has 3" in done.stderr
    assert not out.exists()


def test_the_points_bench_checks_every_runner_against_the_first(monkeypatch):
    """A runner whose objective differs, or whose answer is not certified, fails its cell."""
    from types import SimpleNamespace

    from lapcli.bench import points as bench_points

    def runner(objective, certified=True):
        report = SimpleNamespace(solver="fake", certified=certified)
        return lambda a, b, metric, timeout: SimpleNamespace(objective=objective, report=report)

    runners = {"one": runner(1.0), "same": runner(1.0 + 1e-12), "off": runner(1.01), "unproved": runner(1.0, False)}
    results = bench_points.run_points_bench([(16, "uniform", "sqeuclidean")], runners, tuple(runners),
                                            repeat=2, warmup=0, seed=3)
    assert [t.status for t in results] == ["ok", "ok", "mismatch", "error"]
    assert all(len(t.times_ms) == 2 for t in results)


def test_a_points_bench_runner_that_raises_anything_is_an_error_cell_not_the_suites_end():
    from types import SimpleNamespace

    from lapcli.bench import points as bench_points

    def broken(a, b, metric, timeout):
        raise RuntimeError("broken on purpose")

    def fine(a, b, metric, timeout):
        return SimpleNamespace(objective=1.0, report=SimpleNamespace(solver="fake", certified=True))

    results = bench_points.run_points_bench([(16, "uniform", "sqeuclidean")], {"broken": broken, "fine": fine},
                                            ("broken", "fine"), repeat=1, warmup=0, seed=3)
    assert [(t.status, t.message) for t in results] == [("error", "RuntimeError: broken on purpose"), ("ok", "")]


def test_a_points_bench_cell_past_its_time_limit_reads_timeout_and_the_suite_goes_on():
    """Every call gets the suite's time limit; a solve that runs past it (the auction on a shape
    where it is slow) marks its cell "timeout" instead of holding the run."""
    from types import SimpleNamespace

    from lapcli.bench import points as bench_points
    from lapcli.errors import SolverError

    limits = []

    def slow(a, b, metric, timeout):
        limits.append(timeout)
        raise SolverError("the auction ran past its time limit")

    def fine(a, b, metric, timeout):
        limits.append(timeout)
        return SimpleNamespace(objective=1.0, report=SimpleNamespace(solver="fake", certified=True))

    cells = [(16, "clustered", "sqeuclidean"), (16, "uniform", "sqeuclidean")]
    results = bench_points.run_points_bench(cells, {"slow": slow, "fine": fine}, ("slow", "fine"),
                                            repeat=1, warmup=0, seed=3, timeout=7.5)
    assert [t.status for t in results] == ["timeout", "ok", "timeout", "ok"]
    assert len(results[0].times_ms) == 1 and results[0].message.startswith("stopped after ")  # the call that stopped
    assert limits == [7.5] * 4
    assert bench_points.run_points_bench(cells[:1], {"fine": fine}, ("fine",), repeat=1, warmup=0, seed=3)
    assert limits[-1] == bench_points.CALL_LIMIT_S


def test_the_points_bench_loads_a_runners_kernels_before_its_first_large_cell_of_a_metric():
    """Above WARM_UP_TO a cell is timed without a warm-up solve; where a warm-up is asked for, the
    runner's kernels for the cell's metric are loaded once before its first such cell, so that cell
    does not time their compilation. No warm-up asked: nothing is loaded."""
    from types import SimpleNamespace

    from lapcli.bench import points as bench_points

    events = []

    def runner(a, b, metric, timeout):
        events.append(("solve", len(a), metric))
        return SimpleNamespace(objective=1.0, report=SimpleNamespace(solver="fake", certified=True))

    large = 2 * bench_points.WARM_UP_TO
    cells = [(16, "uniform", "sqeuclidean"), (large, "uniform", "sqeuclidean"), (large, "uniform", "euclidean"),
             (large, "clustered", "sqeuclidean")]
    bench_points.run_points_bench(cells, {"one": runner}, ("one",), repeat=2, warmup=1, seed=3,
                                  load_programs=lambda name, metric: events.append(("load", name, metric)))
    assert events == [("solve", 16, "sqeuclidean")] * 3 + [("load", "one", "sqeuclidean"), ("solve", large, "sqeuclidean"),
                      ("load", "one", "euclidean"), ("solve", large, "euclidean"), ("solve", large, "sqeuclidean")]
    events.clear()
    bench_points.run_points_bench(cells[1:2], {"one": runner}, ("one",), repeat=1, warmup=0, seed=3,
                                  load_programs=lambda name, metric: events.append(("load", name, metric)))
    assert events == [("solve", large, "sqeuclidean")]
    bench_points.load_point_programs("scipy", "sqeuclidean")  # no kernels: nothing to load
    bench_points.load_point_programs("cuda-sap", "sqeuclidean")  # without a GPU: nothing, no error


def test_lap_bench_points_runs_scipy_and_records(tmp_path):
    record = tmp_path / "points.json"
    done = run_cli(["bench", "--suite", "points", "--sizes", "2048", "--solvers", "scipy", "--repeat", "1",
                    "--warmup", "0", "--json", record, "-q"])
    assert done.returncode == 0, done.stderr
    results = json.loads(record.read_text())["results"]
    assert {(r["metric"], r["kind"]) for r in results} == {("sqeuclidean", "uniform")}
    assert all(r["status"] == "ok" and r["objective"] > 0 for r in results)
    assert run_cli(["bench", "--suite", "points", "--kind", "float"]).returncode == 2
    timed = run_cli(["bench", "--suite", "points", "--sizes", "2048", "--solvers", "scipy", "--repeat", "1",
                     "--warmup", "0", "--timeout", "1e-9", "-q", "--json", tmp_path / "timed.json"])
    assert timed.returncode == 0, timed.stderr
    stopped = json.loads((tmp_path / "timed.json").read_text())["results"]
    assert [r["status"] for r in stopped] == ["timeout"]  # scipy's solve ran on; its certificate's pass stopped
    assert stopped[0]["median_ms"] > 0 and stopped[0]["message"].startswith("stopped after ")


def test_lap_bench_points_takes_by_default_only_the_runners_that_run_here(monkeypatch):
    """Without a GPU the default ran cuda-sap and dense too, each cell "error", and exited 1; a
    runner named that cannot run here is bad input (exit 2), as the main sweep's solvers are."""
    from click.testing import CliRunner

    from lapcli.bench import points as bench_points
    from lapcli.cli.main import cli
    from lapcli.engines import registry

    here, why_not = bench_points.runners_here(bench_points.point_runners())
    gpu = registry.get("cuda-sap").available()[0]
    assert {"auto", "scipy"} <= set(here) and ("cuda-sap" in here) == ("dense" in here) == gpu == (why_not is None)
    monkeypatch.setattr(bench_points, "runners_here", lambda runners: (("scipy",), "no GPU (test)"))
    monkeypatch.setattr(bench_points, "POINT_CELLS", ((64, "uniform", "sqeuclidean"),))
    done = CliRunner().invoke(cli, ["bench", "--suite", "points", "--sizes", "64", "--repeat", "1", "--warmup", "0"])
    assert done.exit_code == 0, done.output
    assert "scipy" in done.stdout + done.stderr and "cuda-sap" not in done.stdout + done.stderr
    named = CliRunner().invoke(cli, ["bench", "--suite", "points", "--sizes", "64", "--solvers", "cuda-sap"])
    assert named.exit_code == 2 and "cannot run here: no GPU (test)" in named.stderr


def test_lap_bench_points_runs_auto_alone_caps_it_without_a_gpu_and_records_its_settings(tmp_path, monkeypatch):
    """`--solvers auto` is auto alone (it was every runner here); without the GPU searches auto
    solves the cdist matrix with scipy, so it stops where scipy does (at 65,536 points it raised
    MemoryError, a traceback); a runner's MemoryError is its cell's error, one line, exit 1."""
    from click.testing import CliRunner

    from lapcli.bench import points as bench_points
    from lapcli.cli.main import cli
    from lapcli.engines import registry

    monkeypatch.setattr(bench_points, "POINT_CELLS", ((64, "uniform", "sqeuclidean"), (65536, "uniform", "sqeuclidean")))
    record = tmp_path / "p.json"
    done = CliRunner().invoke(cli, ["bench", "--suite", "points", "--solvers", "auto", "--repeat", "1", "--warmup", "0",
                                    "--json", str(record), "-q"])
    assert done.exit_code == 0, done.output
    payload = json.loads(record.read_text())
    assert {r["runner"] for r in payload["results"]} == {"auto"}
    assert payload["settings"]["runners"] == ["auto"] and payload["settings"]["repeat"] == 1
    statuses = [r["status"] for r in payload["results"]]
    assert statuses == (["ok", "ok"] if registry.get("cuda-sap").available()[0] else ["ok", "skipped"])
    runners = bench_points.point_runners()

    def out_of_memory(*args):
        raise MemoryError("the 64 × 64 cdist matrix needs more memory (test)")

    monkeypatch.setattr(bench_points, "point_runners", lambda: {**runners, "scipy": out_of_memory})
    done = CliRunner().invoke(cli, ["bench", "--suite", "points", "--sizes", "64", "--solvers", "scipy", "-q"])
    assert done.exit_code == 1 and done.stderr.count("\n") == 1 and "needs more memory (test)" in done.stderr


def test_cli_points_duals_are_recovered_even_past_the_default_budget(tmp_path, monkeypatch):
    """--duals asks for them: the matrix route's engine (scipy) must have them recovered whatever
    the default budget, as `lap solve M --duals` does for a matrix."""
    from click.testing import CliRunner

    from lapcli import duals as dual_recovery
    from lapcli.cli.main import cli

    monkeypatch.setitem(dual_recovery.DEFAULT_PASSES, "scipy", 0)  # by default: never worth it
    rng = np.random.default_rng(5)
    a, b, saved = tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "duals.npz"
    np.save(a, rng.random((40, 2)))
    np.save(b, rng.random((50, 2)))
    done = CliRunner().invoke(cli, ["solve", "--points", str(a), str(b), "--duals", str(saved), "-q"])
    assert done.exit_code == 0, done.output
    cost = cdist(np.load(a), np.load(b), "sqeuclidean")
    with np.load(saved) as duals:
        assert (cost - duals["u"][:, None] - duals["v"][None, :]).min() >= -1e-12


def test_the_auctions_tail_is_searched_where_the_blocks_hold_its_columns(monkeypatch):
    """A square's last auction rows go to the searches over every multiprocessor, one block of 512
    threads each (256 for points of more than 10 coordinates), wherever the blocks' shared memory
    holds the columns' state (1,757,184 columns on an H100's 132 multiprocessors of 227 KB), and
    above that the auction bids to the end."""
    import types

    from lapcli.cuda import sap_rounds
    from lapcli.engines.cuda import sap_points

    monkeypatch.setattr(sap_points, "current_gpu", lambda: types.SimpleNamespace(max_shared=232448, sms=132))
    most = sap_rounds.max_columns(232448, 132, 512, record=4)
    assert most == 1757184 == sap_rounds.max_columns(232448, 132, 256, record=18)
    assert [sap_points.tail_threads(m, 2) for m in (1024, 65536, 1048576, most, most + 1)] == [512] * 4 + [None]
    assert sap_points.tail_threads(65536, 10) == 512 and sap_points.tail_threads(65536, 11) == 256


def test_a_matrix_too_large_for_the_host_says_what_it_needed(rng, tmp_path, monkeypatch):
    """Without a GPU two point sets are solved as their cdist matrix: where it does not fit, the
    error says how large it is and what would solve them (API: MemoryError; CLI: exit code 1, one
    line, no output file)."""
    from click.testing import CliRunner

    from lapcli.cli.main import cli
    from lapcli.points import PointProblem

    def no_room(self, on_device=False):
        raise MemoryError

    monkeypatch.setattr(PointProblem, "dense", no_room)
    a, b = rng.random((300, 2)), rng.random((300, 2))
    with pytest.raises(MemoryError, match="300 × 300 cdist matrix of the two sets needs 0.00072 GB; costs are "
                       "computed from the coordinates alone on a GPU"):
        lapcli.solve_points(a, b, solver="scipy")
    # 1-D sets: the engine that needs no matrix named, not the GPU's (a band past auto's cap, here asked)
    with pytest.raises(MemoryError, match="300 × 400 cdist matrix .* solver='sorted' matches these 1-D sets"):
        lapcli.solve_points(rng.random((300, 1)), rng.random((400, 1)), solver="scipy")
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    result = CliRunner().invoke(cli, ["solve", "--points", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"),
                                      "--solver", "scipy", "-o", str(tmp_path / "pairs.csv")])
    assert result.exit_code == 1
    assert result.output.strip().splitlines()[-1].startswith("Error: out of host memory: the 300 × 300")
    assert not (tmp_path / "pairs.csv").exists()


def test_cosine_costs_are_clamped_as_cdists_are():
    """1 − x·y of parallel unit vectors may round an ulp below 0 (and of opposite ones above 2):
    cdist clamps it to [0, 2], and so do lapcli.points.costs and kernels/costs.cuh, so that a set
    matched with itself totals 0.0, as cdist's matrix does, not −2.2e-15."""
    from lapcli.points import costs

    ones = np.ones((10, 3))
    assert lapcli.solve_points(ones, ones, "cosine").objective == 0.0 == cdist(ones, ones, "cosine").sum()
    unit = np.ones(3) / np.sqrt(3)
    assert costs(unit[None], unit[None], "cosine")[0] == 0.0 and costs(unit[None], -unit[None], "cosine")[0] <= 2.0


def test_a_points_suite_whose_runners_run_none_of_its_sizes_is_refused(tmp_path, monkeypatch):
    """Every cell past the chosen runners' limits here: nothing would be timed, so no run, no record."""
    from click.testing import CliRunner

    from lapcli.bench import points as bench_points
    from lapcli.cli.main import cli

    monkeypatch.setattr(bench_points, "runner_limits", lambda: {"auto": 2048, "scipy": 1024, "dense": 16384})
    record = tmp_path / "p.json"
    result = CliRunner().invoke(cli, ["bench", "--suite", "points", "--sizes", "4096", "--solvers", "auto,scipy",
                                      "--json", str(record)])
    assert result.exit_code == 2 and not record.exists()
    assert result.stderr.strip() == ("Error: no chosen points runner runs these sizes here (auto up to n = 2048, "
                                     "scipy up to n = 1024)")


def test_a_points_suite_size_it_lacks_is_refused_with_the_sizes_it_has():
    from click.testing import CliRunner

    from lapcli.bench.points import POINT_CELLS
    from lapcli.cli.main import cli

    result = CliRunner().invoke(cli, ["bench", "--suite", "points", "--sizes", "16"])
    have = ", ".join(map(str, sorted({n for n, _, _ in POINT_CELLS})))
    assert result.exit_code == 2 and result.stderr.strip() == f"Error: --suite points has no cells of n = 16 (its sizes: {have})"
