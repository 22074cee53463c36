"""scipy.optimize.linear_sum_assignment's documented behaviour is the spec (issue: drop-in API)."""

import re
import sys

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli import InfeasibleError, linear_sum_assignment

from .helpers import assert_matches_scipy

CPU_SOLVERS = ("numpy", "scipy")


def scipy_error(cost, maximize=False):
    try:
        scipy_lsa(cost, maximize=maximize)
    except Exception as error:  # noqa: BLE001 - we compare whatever scipy raises
        return type(error), str(error)
    return None


@pytest.mark.parametrize("solver", CPU_SOLVERS)
@pytest.mark.parametrize("shape", [(5, 9), (9, 5), (1, 7), (7, 1), (40, 41), (41, 40)])
def test_rectangular_both_orientations(rng, solver, shape):
    cost = rng.integers(0, 100, shape)
    for maximize in (False, True):
        assert_matches_scipy(lapcli.solve(cost, solver=solver, maximize=maximize), cost, maximize)


@pytest.mark.parametrize("solver", CPU_SOLVERS)
def test_maximize_matches_scipy(rng, solver):
    for n in (1, 4, 30, 101):
        cost = rng.random((n, n))
        assert_matches_scipy(lapcli.solve(cost, solver=solver, maximize=True), cost, maximize=True)


@pytest.mark.parametrize("solver", CPU_SOLVERS)
def test_forbidden_entries_are_never_assigned(rng, solver):
    for maximize, forbidden in ((False, np.inf), (True, -np.inf)):
        cost = rng.random((30, 45))
        cost[rng.random(cost.shape) < 0.5] = forbidden
        solution = lapcli.solve(cost, solver=solver, maximize=maximize)
        assert np.isfinite(cost[solution.row_ind, solution.col_ind]).all()
        assert_matches_scipy(solution, cost, maximize)


@pytest.mark.parametrize("solver", CPU_SOLVERS)
def test_infeasible_matrices_raise_like_scipy(solver):
    cost = np.ones((4, 4))
    cost[:, 2] = np.inf
    cost[1, :] = np.inf
    with pytest.raises(InfeasibleError, match="cost matrix is infeasible"):
        lapcli.solve(cost, solver=solver)
    with pytest.raises(ValueError, match="cost matrix is infeasible"):
        linear_sum_assignment(np.full((2, 2), np.inf))


@pytest.mark.parametrize(
    "cost, maximize",
    [
        (np.array([[np.nan, 1.0], [1.0, 2.0]]), False),
        (np.array([[-np.inf, 1.0], [1.0, 2.0]]), False),
        (np.array([[np.inf, 1.0], [1.0, 2.0]]), True),
        (np.zeros((2, 2, 2)), False),
        (np.array([1.0, 2.0]), False),
        (np.array([["a", "b"]]), False),
        (np.array([[1, None]], dtype=object), False),
        (np.array([[1 + 1j]]), False),
    ],
)
def test_bad_input_raises_scipys_exception_and_message(cost, maximize):
    expected_type, expected_message = scipy_error(cost, maximize)
    with pytest.raises(expected_type) as raised:
        linear_sum_assignment(cost, maximize=maximize)
    assert str(raised.value) == expected_message


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64, np.float16, np.float32, np.float64])
def test_every_numeric_dtype_is_accepted(rng, dtype):
    cost = (rng.integers(0, 2 if dtype is np.bool_ else 100, (23, 17))).astype(dtype)
    for solver in CPU_SOLVERS:
        assert_matches_scipy(lapcli.solve(cost, solver=solver), cost)


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (3, 0)])
def test_empty_matrices_give_empty_assignments(shape):
    rows, cols = linear_sum_assignment(np.zeros(shape))
    ref_rows, ref_cols = scipy_lsa(np.zeros(shape))
    assert rows.shape == ref_rows.shape == (0,) and cols.shape == ref_cols.shape == (0,)
    assert lapcli.solve(np.zeros(shape), solver="numpy").objective == 0
    for dtype, kind in ((np.float64, float), (np.float32, float), (np.int64, int)):  # as scipy's sum of no pairs
        objective = lapcli.solve(np.zeros(shape, dtype)).objective
        assert type(objective) is kind and type(lapcli.solve_batch(np.zeros((1, *shape), dtype)).objectives[0].item()) is kind


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_an_empty_problem_reports_the_dtype_asked_for(dtype):
    """Nothing is cast where nothing is solved, but the report names the working type asked for, as
    a solved problem's does, not the input's."""
    assert lapcli.solve(np.zeros((0, 3), np.int16), dtype=dtype).report.dtype == dtype
    assert lapcli.solve_batch(np.zeros((2, 0, 3), np.int16), dtype=dtype).report.dtype == dtype
    assert lapcli.solve_batch(np.zeros((0, 3, 3), np.int16), sizes=([], []), dtype=dtype).report.dtype == dtype
    assert lapcli.solve(np.zeros((0, 3), np.int16)).report.dtype == "int16"  # none asked: the input's


def test_one_by_one_and_lists_of_lists():
    rows, cols = linear_sum_assignment([[7]])
    assert rows.tolist() == [0] and cols.tolist() == [0]
    rows, cols = linear_sum_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    assert rows.tolist() == [0, 1, 2] and cols.tolist() == [1, 0, 2]


def test_integer_objective_is_exact_beyond_float64(rng):
    cost = rng.integers(2**52, 2**52 + 1000, (20, 20)).astype(np.int64)
    solution = lapcli.solve(cost, solver="numpy")
    exact = sum(int(cost[r, c]) for r, c in zip(solution.row_ind, solution.col_ind))
    assert solution.objective == exact and isinstance(solution.objective, int)
    # scipy works in float64, whose sums of such costs round: it can miss the optimum by a unit.
    # Ours is exact and proved so (integer certificate, tolerance 0).
    ref_rows, ref_cols = scipy_lsa(cost)
    assert solution.objective <= sum(int(cost[r, c]) for r, c in zip(ref_rows, ref_cols))
    assert solution.report.certified and solution.report.certificate["tolerance"] == 0


def test_working_dtype_is_checked(rng):
    big = np.array([[2**40, 1], [1, 2**40]], dtype=np.int64)
    with pytest.raises(ValueError, match=r"^costs lie in \[1, 1099511627776\] and do not fit int32"):
        lapcli.solve(big, solver="numpy", dtype="int32")
    # maximised: the range refused is the negated costs', and said so (it read as the caller's)
    with pytest.raises(ValueError, match=r"^the costs negated to maximise lie in \[-1099511627776, -1\]"):
        lapcli.solve(big, solver="numpy", dtype="int32", maximize=True)
    near = np.array([[2**60, 2**60 + 2**32], [2**60 + 5, 2**60 + 2**33]], dtype=np.int64)  # reduced: rows and columns
    for maximize in (False, True):
        with pytest.raises(ValueError, match=r"^the costs, reduced exactly, lie in \[0, 8589934587\]"):
            lapcli.solve(near, solver="numpy", dtype="int32", maximize=maximize)
    with pytest.raises(ValueError, match="not integers"):
        lapcli.solve(np.array([[0.5, 1.0], [1.0, 0.5]]), solver="numpy", dtype="int64")
    with pytest.raises(ValueError, match="not taken as float32 work"):
        lapcli.solve(big, solver="numpy", dtype="float32")
    cost = rng.integers(0, 1000, (30, 30))
    solution = lapcli.solve(cost, solver="numpy", dtype="float32")
    assert solution.report.dtype == "float32"
    assert_matches_scipy(solution, cost)


@pytest.mark.parametrize("given, name", [(np.dtype("int64"), "int64"), (np.float32, "float32"), (">f8", None)])
def test_a_working_dtype_given_as_numpy_s_is_taken_by_its_name(rng, given, name):
    """np.dtype("int64") compared equal to "int64" and passed the check, then failed as a string
    (AttributeError); a ragged list cast with it before any check. Other spellings are refused."""
    cost = rng.integers(0, 50, (6, 6))
    for call in (lambda: lapcli.solve(cost, dtype=given), lambda: lapcli.solve_batch(cost[None], dtype=given),
                 lambda: lapcli.solve_batch([cost, cost[:4]], dtype=given)):
        if name is None:
            with pytest.raises(ValueError, match="unknown working dtype"):
                call()
        else:
            solution = call()
            assert solution.report.dtype == name


def test_a_float32_objective_is_the_correctly_rounded_sum_of_its_costs():
    """1e30 + 1 − 1e30 in float32 costs: the float64 running sum gave 0; the objective is 1, on every
    path that sums chosen costs (a matrix, a stack, a ragged list)."""
    cost = np.array([[1e30, np.inf, np.inf], [np.inf, 1, np.inf], [np.inf, np.inf, -1e30]], dtype=np.float32)
    assert lapcli.solve(cost).objective == 1.0
    assert lapcli.solve_batch(cost[None]).objectives.tolist() == [1.0]
    assert lapcli.solve_batch([cost, cost[1:, 1:]]).objectives.tolist() == [1.0, float(np.float32(-1e30)) + 1.0]


def test_huge_integers_are_solved_exactly_reduced_or_refused_never_rounded():
    wide = np.array([[2**62, 0], [0, 2**62]], dtype=np.int64)  # a spread int64 duals cannot hold: refused
    with pytest.raises(ValueError, match="does not round integers"):
        lapcli.solve(wide, solver="numpy")
    tricky = np.array([[0, 2**61], [1, 2**61 + 3]], dtype=np.int64)  # rows alone leave 2^61 + 2
    for maximize, optimum in ((False, 2**61 + 1), (True, 2**61 + 3)):
        assert lapcli.solve(tricky, maximize=maximize).objective == optimum
        assert lapcli.solve(tricky, solver="numpy", maximize=maximize).objective == optimum
        assert int(lapcli.solve_batch(tricky[None], maximize=maximize).objectives[0]) == optimum
    tall = np.array([[-(2**62), 2**62], [2**62, -(2**62)], [0, 1]], dtype=np.int64)  # columns not all assigned
    with pytest.raises(ValueError, match="does not round integers"):
        lapcli.solve(tall, solver="numpy")


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_integers_beyond_2_to_50_are_solved_exactly_where_scipy_solves(rng, dtype):
    # int64 costs above ~2^50 at n = 1000 and uint64 above 2^63 used to be refused
    n = 300
    offset = 2**63 + 12345 if dtype is np.uint64 else 2**55
    cost = (rng.integers(0, 10**6, (n, n)).astype(dtype) + dtype(offset)).astype(dtype)
    solution = lapcli.solve(cost, solver="numpy")
    assert solution.report.dtype in ("int32", "int64") and not solution.report.notes  # exact, reduced
    assert solution.report.certified
    # scipy rounds such costs to float64 (ulp 8 at 2^55, 2048 at 2^63); the same problem shifted
    # by the constant offset is small and exact for it, and has the same optimal assignments
    shifted = (cost - dtype(offset)).astype(np.int64)
    ref_rows, ref_cols = scipy_lsa(shifted)
    assert solution.objective == n * offset + int(shifted[ref_rows, ref_cols].sum())


def test_solution_unpacks_like_scipys_tuple(rng):
    cost = rng.integers(0, 10, (6, 6))
    rows, cols = lapcli.solve(cost, solver="numpy")
    ref_rows, ref_cols = scipy_lsa(cost)
    assert cost[rows, cols].sum() == cost[ref_rows, ref_cols].sum()


def test_auto_without_a_gpu_runs_scipy_and_says_why(rng):
    from lapcli.engines import cuda_status

    if cuda_status()[0]:
        pytest.skip("a GPU is present")
    lapx = lapcli.engines.registry.get("lapx").available()[0]
    for shape in ((20, 20), (20, 1000), (1000, 30), (1100, 1100)):
        solution = lapcli.solve(rng.integers(0, 10, shape))
        square_and_large = shape[0] == shape[1] and shape[0] >= 64
        assert solution.report.solver == ("lapx" if lapx and square_and_large else "scipy")
        assert "auto" in solution.report.reason


def test_auto_without_a_gpu_takes_lapx_only_in_its_measured_lead(rng, monkeypatch):
    """Square matrices from n = 64 (integers at any size, floats up to 512), costs exact in float64;
    scipy elsewhere, and scipy whenever lapx is not installed."""
    import dataclasses

    from lapcli.engines import auto, registry

    monkeypatch.setattr(auto, "cuda_status", lambda: (False, "no GPU"))
    lapx = registry.get("lapx")
    for installed in (True, False):
        monkeypatch.setitem(registry.ENGINES, "lapx", dataclasses.replace(lapx, probe=lambda i=installed: (i, "")))
        cases = {(32, 32, "i"): "scipy", (64, 64, "i"): "lapx", (2048, 2048, "i"): "lapx", (64, 80, "i"): "scipy",
                 (512, 512, "f"): "lapx", (513, 513, "f"): "scipy"}
        for (n, m, kind), engine in cases.items():
            cost = rng.integers(0, 1000, (n, m)) if kind == "i" else rng.random((n, m))
            expected = engine if installed else "scipy"
            assert auto.choose(lapcli.problem.prepare(cost, check=False))[0] == expected, (n, m, kind, installed)
        wide = np.full((100, 100), 2**60, dtype=np.int64)  # float64 would round: never lapx
        assert auto.choose(lapcli.problem.prepare(wide, check=False))[0] == "scipy"


def test_auto_on_a_gpu_machine_follows_the_measured_crossovers(rng, monkeypatch):
    """With a GPU (faked here), auto sends square integer problems to the kernel from n = 256 at
    low ranges (measured: 1.13-1.52x scipy at n = 256, R <= 2; 2.2-2.8x at 384, R <= 2), keeps
    n = 256 with R >= 4 and high ranges and floats below 384 on scipy, integers from 384 on the
    kernel (since step 1 by auction: 2.0x scipy at 384, R = 100 and 1000, H100) but those of wide
    ranges (R >= 30) up to 1024 and wider ones (R >= 100) up to 2048 on cuda-sap, and floats from 384
    to 2048 on cuda-sap (1.5-1.8x scipy at 384; 3.6x cuda on squared distances at 1024); above 2048
    floats and wide ranges on cuda-sap only where thread-block clusters exist (faked both ways)."""
    from lapcli.engines import auto
    from lapcli.problem import prepare

    monkeypatch.setattr(auto, "cuda_status", lambda: (True, "a GPU"))
    monkeypatch.setattr(auto, "search_kernel_status", lambda: (True, "a GPU, compute capability 8.0"))
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (False, "an Ampere GPU"))  # above 2048: cuda
    chosen = lambda n, r: auto.choose(prepare(rng.integers(0, max(1, int(r * n)), (n, n))))[0]  # noqa: E731
    assert [chosen(255, 1), chosen(256, 1), chosen(256, 2), chosen(256, 4), chosen(256, 16)] == \
        ["scipy", "cuda", "cuda", "scipy", "scipy"]
    assert [chosen(384, 1), chosen(384, 8), chosen(383, 16), chosen(384, 16), chosen(2049, 1000)] == \
        ["cuda", "cuda", "scipy", "cuda", "cuda"]
    # wide integer ranges up to n = 1024: cuda-sap (H100, n = 1024, R = 100-1000: its kernels half cuda's)
    assert [chosen(1024, 10), chosen(1024, 100), chosen(1024, 1000), chosen(384, 100)] == \
        ["cuda", "cuda-sap", "cuda-sap", "cuda-sap"]
    # wider ranges up to 2048 (H100, n = 2048: R = 30 cuda 17.9 / cuda-sap 21.5 ms, R = 100 21.8 / 14.9)
    assert [chosen(1025, 30), chosen(2048, 30), chosen(1025, 100), chosen(2048, 100), chosen(2048, 1000)] == \
        ["cuda", "cuda", "cuda-sap", "cuda-sap", "cuda-sap"]
    assert [chosen(384, 30), chosen(512, 30), chosen(1024, 30), chosen(512, 20)] == \
        ["cuda-sap", "cuda-sap", "cuda-sap", "cuda"]  # R = 30 estimates just under 30 from a sample
    floats = lambda n: auto.choose(prepare(rng.random((n, n))))[0]  # noqa: E731
    assert [floats(383), floats(384), floats(2048), floats(2049)] == ["scipy", "cuda-sap", "cuda-sap", "cuda"]
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (True, "a Hopper GPU"))
    assert [floats(2049), chosen(2049, 1000), chosen(2049, 1)] == ["cuda-sap", "cuda-sap", "cuda"]


def test_one_solve_in_a_new_process_keeps_integers_off_cuda_sap(rng, monkeypatch, tmp_path):
    """`lap solve` of one input is one solve in a new process, where cuda-sap's first call (CuPy,
    its kernels' first loads) costs more than its lead on integer squares up to 4096 (H200, cold
    wall: 1.4-1.9 s against cuda's 0.4-0.6): those go to cuda; floats, larger squares and a
    process that solves many keep the crossovers' pick."""
    from dataclasses import replace

    from click.testing import CliRunner

    from lapcli.cli.main import cli
    from lapcli.engines import auto
    from lapcli.problem import prepare

    monkeypatch.setattr(auto, "cuda_status", lambda: (True, "a GPU"))
    monkeypatch.setattr(auto, "search_kernel_status", lambda: (True, "a GPU, compute capability 9.0"))
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (True, "a GPU, compute capability 9.0"))
    integers, floats = rng.integers(0, 100 * 1024, (1024, 1024)), rng.random((1024, 1024))
    assert [auto.choose(prepare(m))[0] for m in (integers, floats)] == ["cuda-sap", "cuda-sap"]
    monkeypatch.setattr(auto, "_one_solve", True)
    engine, reason = auto.choose(prepare(integers))
    assert engine == "cuda" and "one solve in a new process" in reason
    assert auto.choose(prepare(floats))[0] == "cuda-sap"
    monkeypatch.setattr(auto, "ONE_SOLVE_INTEGERS_UP_TO", 1000)
    assert auto.choose(prepare(integers))[0] == "cuda-sap"  # above the side measured
    monkeypatch.setattr(auto, "CROSSOVERS", replace(auto.CROSSOVERS, sap_floats_up_to=100))
    monkeypatch.setattr(auto, "ONE_SOLVE_INTEGERS_UP_TO", 4096)
    assert auto.choose(prepare(rng.integers(0, 100, (300, 900))))[0] == "cuda-sap"  # a long rectangle: as it is
    monkeypatch.setattr(auto, "_one_solve", False)
    seen = []  # the command line says so for one input only, and only while it solves
    real = auto.choose_for_matrix
    monkeypatch.setattr(auto, "choose_for_matrix", lambda problem: seen.append(auto._one_solve) or real(problem))
    monkeypatch.setattr("lapcli.cli.on_dask.dask_by_default", lambda: False)  # several GPUs: still this process
    np.save(tmp_path / "m.npy", rng.integers(0, 9, (3, 3)))
    for inputs, flags in (([tmp_path / "m.npy"], [True]), ([tmp_path / "m.npy"] * 2, [False, False])):
        seen.clear()
        assert CliRunner().invoke(cli, ["solve", *map(str, inputs), "--quiet"]).exit_code == 0
        assert seen == flags and auto._one_solve is False


def test_before_ampere_floats_stay_on_the_cuda_kernel(rng, monkeypatch):
    """cuda-sap and cuda-batch run kernels/batch_lap.cu, whose warp argmin (__reduce_min_sync)
    needs compute capability 8.0: on an older GPU both say why they cannot run, and auto keeps
    floats on cuda and stacks on scipy-batch."""
    from lapcli.cuda import probe
    from lapcli.engines import auto, registry
    from lapcli.problem import prepare

    monkeypatch.setattr(probe, "cuda_status", lambda: (True, "a GPU"))
    monkeypatch.setattr(auto, "cuda_status", lambda: (True, "a GPU"))
    monkeypatch.setattr(probe, "device_compute_capability", lambda ordinal=0: (7, 5))
    probe.search_kernel_status.cache_clear()
    try:
        for name in ("cuda-sap", "cuda-batch"):
            available, why = registry.get(name).available()
            assert not available and "compute capability 7.5" in why and "8.0 or newer" in why
        assert auto.choose(prepare(rng.random((600, 600))))[0] == "cuda"
        engine, reason = auto.choose(prepare(rng.random((4, 20, 20)), stack=True))
        assert engine == "scipy-batch" and "compute capability 7.5" in reason
        monkeypatch.setattr(probe, "device_compute_capability", lambda ordinal=0: (9, 0))
        probe.search_kernel_status.cache_clear()
        assert registry.get("cuda-sap").available() == (True, "a GPU, compute capability 9.0")
        assert auto.choose(prepare(rng.random((600, 600))))[0] == "cuda-sap"
    finally:
        probe.search_kernel_status.cache_clear()


def test_a_first_solve_reports_its_one_off_import_apart_from_the_solve():
    """scipy's first import (~0.2-0.5 s) is set-up, not solving: it is ``details.import_ms``, and
    neither ``total_ms`` nor a stack's problems per second includes it."""
    import json
    import subprocess
    import sys

    script = ("import json, numpy as np, lapcli\n"
              "s = lapcli.solve(np.arange(20).reshape(5, 4))\n"
              "print(json.dumps([s.report.total_ms, s.report.details.get('import_ms')]))")
    total_ms, import_ms = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                                    check=True).stdout)
    assert import_ms is not None and import_ms > 10 * total_ms


def _squared_distances(rng, n, m, d, dtype=np.float64):
    a, b = rng.random((n, d)), rng.random((m, d))
    return (((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)).astype(dtype)


def test_auto_above_the_one_block_search_takes_the_auction_where_it_wins(rng, monkeypatch):
    """Above the one-block search's columns, with thread-block clusters: minimised floats (squared
    distances or not) and minimised integers of R ≥ 60 (from 9 above 4096 columns, from 2.5 above
    8192) that the auction's float64 resolves go to cuda-sap; low ranges, integers too wide,
    maximised costs and sizes a cluster cannot hold to cuda."""
    from dataclasses import replace

    from lapcli.engines import auto
    from lapcli.problem import prepare

    monkeypatch.setattr(auto, "cuda_status", lambda: (True, "a GPU"))
    monkeypatch.setattr(auto, "search_kernel_status", lambda: (True, "a GPU, compute capability 9.0"))
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (True, "a GPU, compute capability 9.0"))
    monkeypatch.setattr(auto, "CROSSOVERS", replace(auto.CROSSOVERS, sap_floats_up_to=400, sap_wide_ints_up_to=400))
    distances = _squared_distances(rng, 450, 450, 2)
    engine, reason = auto.choose(prepare(distances))
    assert engine == "cuda-sap" and "ε-scaling auction" in reason
    assert auto.choose(prepare(rng.random((450, 450)).astype(np.float32)))[0] == "cuda-sap"
    assert auto.choose(prepare(distances, maximize=True))[0] == "cuda"
    integers = lambda r, top=None: prepare(rng.integers(0, top or max(1, int(r * 450)), (450, 450)))  # noqa: E731
    assert [auto.choose(integers(r))[0] for r in (1, 10, 50, 100, 1000)] == ["cuda", "cuda", "cuda", "cuda-sap", "cuda-sap"]
    assert auto.choose(integers(0, top=2**40))[0] == "cuda"  # R·n² past the auction's float64 resolution
    monkeypatch.setattr(auto, "CROSSOVERS", replace(auto.CROSSOVERS, large_ints_ranges=((450, 60.0), (500, 10.0))))
    at = lambda n, r: auto.choose(prepare(rng.integers(0, int(r * n), (n, n))))[0]  # noqa: E731
    assert [at(450, 30), at(500, 30), at(500, 5), at(520, 5), at(520, 1)] == \
        ["cuda", "cuda-sap", "cuda", "cuda-sap", "cuda"]  # the range from which cuda-sap wins falls with n
    assert auto.choose(prepare(rng.random((430, 450))))[0] == "cuda"  # near-square: no auction for a rectangle
    assert auto.choose(prepare(distances[:400, :400].copy()))[0] == "cuda-sap"  # the one-block search
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (columns <= 400, "holds 400 columns"))
    assert auto.choose(prepare(distances))[0] == "cuda"  # more columns than a cluster holds on this GPU
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (False, "compute capability 8.0"))
    engine, reason = auto.choose(prepare(distances))
    assert engine == "cuda" and "compute capability 8.0" in reason


def test_thread_block_clusters_need_hopper(monkeypatch):
    from lapcli.cuda import probe

    monkeypatch.setattr(probe, "cuda_status", lambda: (True, "a GPU"))
    for arch, expected in (((8, 0), False), ((8, 9), False), ((9, 0), True)):
        monkeypatch.setattr(probe, "device_compute_capability", lambda ordinal=0, arch=arch: arch)
        probe.search_kernel_status.cache_clear()
        available, why = probe.cluster_kernel_status()
        assert available == expected
        assert expected or f"compute capability {arch[0]}.{arch[1]}" in why and "9.0 or newer (Hopper)" in why
    probe.search_kernel_status.cache_clear()


def test_auto_solves_long_rectangles_as_they_are_on_the_gpu(rng, monkeypatch):
    """k × m with the long side above 2048, at least twice the short one and the short one at
    least 256: cuda-sap on the rectangle (measured 100× the padded cuda kernel at 2000 × 8000, 30×
    scipy at 1000 × 20000); near-square ones, narrow ones and those a cluster cannot hold keep
    their engines."""
    from lapcli.engines import auto
    from lapcli.problem import prepare

    monkeypatch.setattr(auto, "cuda_status", lambda: (True, "a GPU"))
    monkeypatch.setattr(auto, "search_kernel_status", lambda: (True, "a GPU, compute capability 9.0"))
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (True, "a GPU, compute capability 9.0"))
    chosen = lambda k, m: auto.choose(prepare(rng.integers(0, 1000, (k, m))))[0]  # noqa: E731
    assert [chosen(1000, 2500), chosen(2500, 1000), chosen(256, 3000), chosen(1500, 2500), chosen(1000, 2048)] == \
        ["cuda-sap", "cuda-sap", "cuda-sap", "cuda", "cuda"]  # 1000 × 2048: the one-block search's columns, padded
    assert chosen(255, 3000) == chosen(20, 3000) == "scipy"  # a short side below 256: scipy's microseconds
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (columns <= 2400, "holds 2400 columns"))
    assert chosen(1000, 2500) == "cuda"  # more columns than a cluster holds on this GPU
    monkeypatch.setattr(auto, "cluster_kernel_status", lambda columns=0: (False, "compute capability 8.0"))
    assert [chosen(1000, 2500), chosen(20, 3000)] == ["cuda", "scipy"]


@pytest.mark.parametrize("cost", [[[2**64, 1], [1, 2**64]], [["1", "2"], ["3", "0"]], [[1, None]], [["a", "b"], ["c", "d"]],
                                  [[1, 2], [3]]], ids=["past-int64", "text-numbers", "none", "text", "ragged"])
def test_the_drop_in_takes_and_refuses_what_scipy_does_with_a_gpu_too(monkeypatch, cost):
    """Where CUDA runs, lists NumPy holds as objects or text went to lapcli's pipeline, which refused
    them all with its TypeError; scipy converts some and refuses the others in its own words."""
    from decimal import Decimal

    from lapcli import api

    monkeypatch.setattr(api, "cuda_status", lambda: (True, "a CUDA device, pretended"))
    for given in (cost, [[Decimal(1), 2], [3, 4]]):
        try:
            expected = [a.tolist() for a in scipy_lsa(given)]
        except (ValueError, TypeError) as error:
            with pytest.raises(type(error), match=re.escape(str(error)[:40])):
                lapcli.linear_sum_assignment(given)
        else:
            assert [a.tolist() for a in lapcli.linear_sum_assignment(given)] == expected


@pytest.mark.parametrize("off", [False, np.False_, 0])
def test_certify_false_in_any_of_its_forms_certifies_nothing(off):
    """``certify is not False`` read np.False_ and 0 as True: the duals were recovered and checked."""
    cost = np.random.default_rng(3).random((6, 6))
    solution = lapcli.solve(cost, solver="scipy", certify=off)
    assert not solution.report.certified and solution.duals is None
    assert lapcli.solve(cost, solver="scipy", certify=np.True_).report.certified
    assert lapcli.solve_batch(cost[None], solver="scipy-batch", certify=off).report.certified is False
    with pytest.raises(ValueError, match="certify must be True, False or None, not 'no'"):
        lapcli.solve(cost, certify="no")


@pytest.mark.parametrize("sense", [[False], (True,), np.array([True, False]), "False", np.array("False")])
def test_a_sense_that_is_no_true_or_false_is_refused_by_the_solvers_of_one_problem(sense):
    """``maximize=[False]`` read as True: solve and solve_points maximised, where the batch calls
    refuse it; a 2-element array raised NumPy's "truth value … is ambiguous". The drop-in keeps
    scipy's reading (``if maximize``), as scipy's callers expect."""
    cost = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    with pytest.raises(ValueError, match=r"^maximize must be True or False, not "):
        lapcli.solve(cost, maximize=sense)
    with pytest.raises(ValueError, match=r"^maximize must be True or False, not "):
        lapcli.solve_points(np.array([[0.0], [1.0]]), np.array([[0.0], [1.0]]), maximize=sense)
    assert lapcli.solve(cost, maximize=np.True_).objective == 11 and lapcli.solve(cost, maximize=0).objective == 5
    if isinstance(sense, str) or getattr(getattr(sense, "dtype", None), "kind", None) == "U":
        with pytest.raises(ValueError, match=r"^maximize must be True or False, not "):  # a word in a batch call too
            lapcli.solve_batch(cost[None], maximize=sense)
    if not isinstance(sense, np.ndarray) or sense.ndim == 0:
        assert [a.tolist() for a in linear_sum_assignment(cost, maximize=sense)] == \
            [a.tolist() for a in scipy_lsa(cost, maximize=sense)]


def test_the_ranges_measured_faster_on_cuda_sap_reach_it_through_their_estimate(rng):
    """The large squares' thresholds on the estimated R (8 rows' spread over k): generated integers
    of R = 10 at 8192 and R = 3 at 16384, measured faster on cuda-sap, read 9.99 and 2.99 and once
    fell below thresholds of 10 and 3; R = 3 at 8192 and R = 1 at 16384 stay below (cuda's)."""
    from types import SimpleNamespace

    from lapcli.engines import auto

    def estimate(k, r):
        return auto.estimated_range(SimpleNamespace(original=rng.integers(0, r * k, (auto.SAMPLE_ROWS, k)), size=k))

    for k, faster_on_sap, faster_on_cuda in ((4096, 100, 30), (8192, 10, 3), (16384, 3, 1)):
        threshold = auto.CROSSOVERS.large_ints_range_at(k)
        assert estimate(k, faster_on_sap) >= threshold > estimate(k, faster_on_cuda), k


@pytest.mark.parametrize("solver", [["scipy"], {"scipy": 1}, None, 1])
def test_a_solver_that_is_not_a_name_is_bad_input(solver):
    """A list or dict for the solver failed as Python's unhashable TypeError; it is refused as any
    unknown name is, by every entry point."""
    cost = np.ones((2, 2))
    for call in (lambda: lapcli.solve(cost, solver=solver), lambda: lapcli.solve_batch(cost[None], solver=solver),
                 lambda: lapcli.solve_batch([cost, cost[:1]], solver=solver)):
        with pytest.raises(lapcli.LapInputError, match="unknown solver"):
            call()


def test_a_device_input_is_solved_on_its_own_gpu_and_another_device_is_refused(monkeypatch):
    """The CUDA engines launch on the current GPU: an input on another was read there through a
    pointer of its own GPU. Each entry runs on its inputs' GPU; ``device=`` naming another, inputs on
    two GPUs and a device that is no number are bad input (stand-in arrays on "GPUs" 1 and 0 here, of
    a stand-in CuPy with two GPUs: the refusals come before any CUDA call). The first argument may be
    given by name, as scipy's ``cost_matrix=``."""
    from types import SimpleNamespace

    from lapcli.cuda import probe
    from lapcli.input_device import gpu_of

    class OnGpu:  # what the entries read of a CuPy array before solving: its type and device
        def __init__(self, gpu):
            self.device = SimpleNamespace(id=gpu)

    stand_in = SimpleNamespace(ndarray=OnGpu, cuda=SimpleNamespace(runtime=SimpleNamespace(getDeviceCount=lambda: 2)))
    monkeypatch.setitem(sys.modules, "cupy", stand_in)
    monkeypatch.setattr(probe, "cuda_status", lambda: (True, ""))
    one = OnGpu(1)
    assert gpu_of(one) == gpu_of([one]) == 1 and gpu_of(np.eye(2)) is gpu_of([]) is None
    entries = (lapcli.solve, lapcli.solve_batch, lambda costs, device: lapcli.solve_points(costs, costs, device=device))
    for entry in entries:
        for device in (0, np.int64(0)):
            with pytest.raises(ValueError, match=r"^the costs lie on GPU 1 and device=0 names another"):
                entry(one, device=device)
        for device in (True, 1.0, "1"):
            with pytest.raises(ValueError, match=r"^device must be a GPU number, not"):
                entry(one, device=device)
    with pytest.raises(ValueError, match=r"^the inputs lie on GPUs 0, 1: give them on one"):
        lapcli.solve_points(OnGpu(0), one)
    with pytest.raises(ValueError, match=r"^the costs lie on GPU 1 and device=0"):  # the input named
        lapcli.solve(cost=one, device=0)
    monkeypatch.undo()
    cost = np.array([[4, 1], [2, 0]])
    assert lapcli.linear_sum_assignment(cost_matrix=cost)[1].tolist() == [1, 0]
    assert lapcli.solve(cost=cost).objective == 3 and lapcli.solve_batch(costs=cost[None]).objectives.tolist() == [3]
    assert lapcli.batch_linear_assignment(cost=cost[None]).tolist() == [[1, 0]]
    with pytest.raises(ValueError, match=r"^device must be a GPU number, not True"):  # True read as GPU 1
        lapcli.solve(cost, device=True)


@pytest.mark.gpu
def test_cupy_inputs_on_a_second_gpu_are_solved_there(rng):
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    from scipy.optimize import linear_sum_assignment as scipy_lsa

    cost = rng.integers(0, 100, (64, 64)).astype(np.int32)
    best = cost[scipy_lsa(cost)].sum()
    stack = rng.random((5, 12, 12)).astype(np.float32)
    with cupy.cuda.Device(1):
        on_one, stack_on_one = cupy.asarray(cost), cupy.asarray(stack)
    assert cupy.cuda.runtime.getDevice() == 0
    for solver in ("auto", "cuda", "cuda-sap", "cuda-stepwise"):
        solution = lapcli.solve(on_one, solver=solver)  # (its answer on the host, as scipy's: NumPy arrays)
        assert solution.objective == best, solver
        assert solver == "auto" or solution.report.device.startswith("cuda:1 "), solution.report.device  # its GPU
    rows, cols = lapcli.linear_sum_assignment(on_one)
    assert cost[rows.get(), cols.get()].sum() == best and rows.device.id == 1
    solved = lapcli.solve_batch(stack_on_one, solver="cuda-batch")
    assert solved.col_ind.device.id == 1
    np.testing.assert_allclose(solved.objectives, [s[scipy_lsa(s)].sum() for s in stack], rtol=1e-6)
    members = [stack_on_one[0, :3], stack_on_one[1]]
    assert [c.device.id for c in lapcli.solve_batch(members).col_ind] == [1, 1]
    points = rng.random((3000, 2))
    with cupy.cuda.Device(1):
        a, b = cupy.asarray(points), cupy.asarray(points[::-1].copy())
    assert lapcli.solve_points(a, b, solver="cuda-sap").objective == pytest.approx(0.0, abs=1e-9)
    assert cupy.cuda.runtime.getDevice() == 0  # the caller's current device is left as it was


def test_the_feasibility_checks_first_import_is_set_up_not_the_solve(monkeypatch):
    """scipy.sparse, imported by the first check of forbidden pairs (~0.2 s cold), was counted in
    total_ms (211 ms for a 5 × 5 matrix with one inf, 2.4 ms without): it is set-up, as an engine's import."""
    import types

    from lapcli import feasibility, pipeline

    loaded = pipeline.loaded_engine  # each engine's import as a first use's: 2 ms, recorded beside the check's
    monkeypatch.setattr(pipeline, "loaded_engine", lambda engine: (loaded(engine)[0], 2.0))
    for solve in (lambda c: lapcli.solve(c, solver="scipy"), lambda c: lapcli.solve_batch(c[None], solver="scipy-batch"),
                  lambda c: lapcli.solve_batch([c, c[:1]], solver="scipy-batch", dtype="float32")):  # packed members
        ticks = iter([0.0, 0.5])  # the matching's import, as the check times it: 500 ms
        monkeypatch.setattr(feasibility, "time", types.SimpleNamespace(perf_counter=lambda: next(ticks)))
        report = solve(np.array([[np.inf, 1.0], [2.0, 3.0]])).report
        assert report.details["import_ms"] >= 500 and report.total_ms < 500
