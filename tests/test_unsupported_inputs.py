"""Degenerate and unsupported inputs: a correct empty answer, or one clean error (exit code 2 on the
command line, no output file), never an "internal error"."""

import itertools
import re
import subprocess
import sys
import warnings
from fractions import Fraction

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.errors import TooWideError

LAP = [sys.executable, "-m", "lapcli"]


@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 3), (2, 3, 0), (0, 0, 0), (2, 0, 0)])
def test_stacks_with_an_empty_axis_give_empty_answers(shape):
    solution = lapcli.solve_batch(np.ones(shape))
    assert np.asarray(solution.col_ind).shape == shape[:2] and (np.asarray(solution.col_ind) == -1).all()
    assert list(solution.objectives) == [0] * shape[0]
    assert lapcli.batch_linear_assignment(np.ones(shape, dtype=np.int32)).shape == shape[:2]


def test_torch_stacks_that_need_grad_or_are_bfloat16_are_solved():
    torch = pytest.importorskip("torch")
    stack = torch.tensor(np.random.default_rng(5).random((4, 6, 6)), dtype=torch.float32)
    expected = lapcli.solve_batch(stack).objectives
    assert np.array_equal(lapcli.solve_batch(stack.clone().requires_grad_(True)).objectives, expected)
    bf16 = stack.to(torch.bfloat16)  # bfloat16 values are float32 values exactly
    np.testing.assert_array_equal(lapcli.solve_batch(bf16).objectives, lapcli.solve_batch(bf16.float()).objectives)


def test_float8_tensors_are_read_as_float32_as_bfloat16_is():
    """torch's float8 dtypes, which NumPy lacks too, failed in torch's .numpy() (TypeError: unsupported
    ScalarType); float32 holds their values exactly, as bfloat16's."""
    torch = pytest.importorskip("torch")
    values = torch.tensor(np.random.default_rng(7).integers(0, 16, (3, 5, 5)) / 4.0, dtype=torch.float32)
    for name in ("float8_e4m3fn", "float8_e5m2"):
        small = values.to(getattr(torch, name))
        exact = small.float().numpy()
        assert lapcli.solve(small[0]).objective == lapcli.solve(exact[0]).objective
        np.testing.assert_array_equal(lapcli.solve_batch(small).objectives, lapcli.solve_batch(exact).objectives)
        points = lapcli.solve_points(small[0], small[1])
        assert points.objective == lapcli.solve_points(exact[0], exact[1]).objective
    if hasattr(torch, "float4_e2m1fn_x2"):  # two values a byte, which torch does not widen: refused by name
        packed = torch.ones((2, 2), dtype=torch.uint8).view(torch.float4_e2m1fn_x2)
        with pytest.raises(lapcli.errors.LapTypeError, match="a float4_e2m1fn_x2 tensor cannot be read"):
            lapcli.solve(packed)


@pytest.mark.parametrize("gpu_route", [False, True])
def test_one_torch_matrix_that_needs_grad_or_is_bfloat16_is_solved(monkeypatch, gpu_route):
    """``solve`` and ``linear_sum_assignment`` read a CPU tensor as the stacks do: detached,
    bfloat16 as float32 (exact), so a model's cost matrix needs no ``.detach()``; the same with or
    without a GPU (``gpu_route``: linear_sum_assignment's way through ``prepare``, which a machine
    with a GPU takes). Objects of torch's that are no tensor are refused as before."""
    torch = pytest.importorskip("torch")
    if gpu_route:
        monkeypatch.setattr(lapcli.api, "cuda_status", lambda: (True, "the test's"))
        monkeypatch.setattr(lapcli.api, "choose", lambda problem: ("scipy", "the test's"))
    matrix = torch.tensor(np.random.default_rng(6).random((5, 7)), dtype=torch.float32)
    expected = lapcli.solve(matrix.numpy())
    needs_grad = matrix.clone().requires_grad_(True)
    solved = lapcli.solve(needs_grad)
    assert solved.col_ind.tolist() == expected.col_ind.tolist() and solved.objective == expected.objective
    assert lapcli.linear_sum_assignment(needs_grad)[1].tolist() == expected.col_ind.tolist()
    bf16 = matrix.to(torch.bfloat16)
    assert lapcli.solve(bf16).objective == lapcli.solve(bf16.float().numpy()).objective
    assert lapcli.linear_sum_assignment(bf16)[1].tolist() == lapcli.solve(bf16.float().numpy()).col_ind.tolist()
    with pytest.raises(lapcli.errors.LapInputError, match="2-D"):
        lapcli.solve(torch.Size([3, 3]))


def test_a_masked_stack_is_solved_as_its_data_as_scipy_reads_it():
    """A masked array's mask is not a cost: scipy reads the data, and so does every batch route (the
    scipy loop once reduced rows by the unmasked minimum and checked exactness on unmasked entries)."""
    masked = np.ma.array([[[5.0, 100.0], [0.0, 50.0]]], mask=[[[1, 0], [0, 0]]])
    wide = np.ma.array([[[2**60 + 1, 2**60], [0, 0]]], dtype=np.int64, mask=[[[1, 1], [0, 0]]])
    # the data's optima: 5 + 50 < 100 + 0, and 2^60 + 0 < (2^60 + 1) + 0 (which float64 cannot tell)
    for stack, maximize, expected in ((masked, False, [[0, 1]]), (-masked, True, [[0, 1]]), (wide, False, [[1, 0]])):
        assert lapcli.batch_linear_assignment(stack, maximize=maximize).tolist() == expected
        assert lapcli.solve_batch(stack, maximize=maximize).col_ind.tolist() == expected


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_lists_of_numpy_matrices_are_solved_as_their_arrays():
    """np.matrix members (a subclass that stays 2-D) of one shape stack as plain arrays."""
    first, second = np.matrix([[4, 1], [2, 8]]), np.matrix([[1, 5], [3, 2]])
    assert lapcli.solve_batch([first, second]).col_ind.tolist() == [[1, 0], [0, 1]]
    assert [c.tolist() for c in lapcli.solve_batch([first, np.matrix([[1, 2, 0]])]).col_ind] == [[1, 0], [2]]


@pytest.mark.parametrize("make", [lambda: np.ones((3, 3), np.longdouble), lambda: np.ones((2, 3, 3), np.longdouble)])
def test_float128_is_refused_like_scipy(make):
    cost = make()
    call = lapcli.solve if cost.ndim == 2 else lapcli.solve_batch
    with pytest.raises(lapcli.errors.LapTypeError, match="Cannot cast array data from dtype\\('float128'\\)"):
        call(cost)  # lapcli's own error (the CLI's exit 2), a TypeError as scipy raises


@pytest.mark.parametrize("timeout", [-1, 0, float("nan"), "1"])
def test_a_time_limit_is_a_positive_number(timeout):
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        lapcli.solve(np.eye(3), timeout=timeout)
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        lapcli.solve_batch(np.ones((2, 3, 3)), timeout=timeout)


def test_an_infinite_time_limit_is_no_limit():
    """Infinity reaches no engine (a launcher's nanoseconds would overflow): it is None, no limit."""
    from lapcli.options import check_timeout

    assert check_timeout(float("inf")) is None and check_timeout(None) is None and check_timeout(2.5) == 2.5
    cost = np.arange(9.0).reshape(3, 3) % 4
    assert lapcli.solve(cost, solver="numpy", timeout=float("inf")).objective == lapcli.solve(cost).objective


@pytest.mark.parametrize("solver", ["scipy", "numpy", "lapx"])
def test_a_time_limit_for_an_engine_without_a_clock_is_refused_or_said(tmp_path, solver):
    """scipy, lapx and numpy cannot stop mid-solve: --timeout was dropped without a word. The CLI
    refuses one with such a --solver (exit 2, before the input is read); the library solves, and its
    report says the limit was not applied (a call over several engines keeps working)."""
    from click.testing import CliRunner

    from lapcli.cli.main import cli

    result = CliRunner().invoke(cli, ["solve", str(tmp_path / "nowhere.npy"), "--solver", solver, "--timeout", "1"])
    assert result.exit_code == 2 and f"solver '{solver}' cannot stop mid-solve, so it takes no timeout; cuda, " \
        "cuda-stepwise, cuda-sap do" in result.stderr  # before the missing file is read; the matrix engines that stop
    if solver == "lapx":
        pytest.importorskip("lap")
    cost = np.arange(16.0).reshape(4, 4) % 5
    for solution in (lapcli.solve(cost, solver=solver, timeout=2), lapcli.solve(cost, timeout=2)):
        if solution.report.solver in ("scipy", "lapx", "numpy"):  # auto: on a machine without a GPU
            notes = " ".join(solution.report.notes)
            assert f"timeout not applied to the solve: {solution.report.solver} cannot stop mid-solve" in notes
    assert "timeout not applied" not in " ".join(lapcli.solve(cost, solver=solver).report.notes)
    stacked = lapcli.solve_batch(np.stack([cost, cost]), solver="scipy-batch", timeout=2)
    assert any(note.startswith("timeout not applied to the solve: scipy-batch") for note in stacked.report.notes)


def test_the_cli_refuses_float128_and_huge_matrices_with_one_line_and_no_file(tmp_path):
    np.save(tmp_path / "f128.npy", np.ones((3, 3), np.longdouble))
    result = subprocess.run(LAP + ["solve", "f128.npy", "-o", "out.csv"], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 2 and "float128" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    result = subprocess.run(LAP + ["generate", "--n", "1000000000000", "-o", "huge.npy"], cwd=tmp_path,
                            capture_output=True, text=True)
    assert result.returncode == 2 and "GiB" in result.stderr and "internal error" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f128.npy"]


def test_a_finite_objective_whose_partial_sums_overflow_is_summed(rng):
    """1e308 + 1.5e308 − ... : math.fsum raises OverflowError where a partial sum passes float64's
    range, though the optimum (1e308 here) does not; a total past the range is inf."""
    cost = np.array([[1e308, 1.5e308, 1.5e308], [1.5e308, 1e308, 1.5e308], [0.0, 0.0, -1e308]])
    for solver in ("numpy", "scipy"):
        assert lapcli.solve(cost, solver=solver).objective == 1e308
    assert lapcli.solve_batch(cost[None]).objectives.tolist() == [1e308]
    assert lapcli.solve_batch([cost, cost[:2]]).objectives.tolist() == [1e308, np.inf]
    # the exact sum, correctly rounded: a subnormal term beside partial sums past the range counts
    tiny = np.full((5, 5), np.inf)
    np.fill_diagonal(tiny, [1.7e308, 1.7e308, -1.7e308, -1.7e308, 5e-324])
    assert lapcli.solve(tiny).objective == 5e-324 and lapcli.solve_batch(tiny[None]).objectives.tolist() == [5e-324]
    assert lapcli.solve(-tiny, maximize=True).objective == -5e-324


def test_costs_near_the_float_range_are_solved_and_certified_with_headroom():
    """Work within 4(k + 1)× of float64's largest value: scipy's path sums overflowed (an answer
    1.7e308 for the optimum 1.5e308 below, caught by the certificate as "a bug", and silently wrong
    in the batch forms); scipy now gets the costs scaled by a power of two, in every form."""
    cases = [(np.array([[1.7e308, 1e308, 5e307], [5e307, 0.0, -1e308], [1.7e308, 1.7e308, 0.0]]), False),
             (np.array([[-1e308, 0.0, -1e308], [5e307, 1.7e308, 1.0], [-1e308, 5e307, -1e308]]), True)]
    for cost, maximize in cases:
        totals = {sum(Fraction(float(cost[i, p[i]])) for i in range(3)) for p in itertools.permutations(range(3))}
        best = max(totals) if maximize else min(totals)
        for solver in ("auto", "scipy", "numpy"):
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)  # no stray overflow warning either
                solution = lapcli.solve(cost, solver=solver, maximize=maximize, certify=True)
            got = sum(Fraction(float(cost[r, c])) for r, c in zip(solution.row_ind, solution.col_ind))
            assert got == best and solution.report.certified, solver
            u, v = solution.duals
            assert np.isfinite(u).all() and np.isfinite(v).all()
        forbidden = np.full((4, 4), -np.inf if maximize else np.inf)  # ±inf left the headroom unseen
        forbidden[:3, :3], forbidden[3, 3] = cost, 0.0
        columns = lapcli.solve_batch([forbidden, forbidden[:2, :2]], maximize=maximize).col_ind[0]
        assert sum(Fraction(float(cost[i, c])) for i, c in enumerate(columns[:3])) == best and columns[3] == 3
        # one work stack has no float64 above such costs for a forbidden pair: TooWideError, on which
        # auto's ragged path (the GPU's packed stack) solves each member alone, as just above
        with pytest.raises(TooWideError, match="to mark forbidden entries"):
            lapcli.solve_batch(forbidden[None], maximize=maximize)
        many = [cost] * 300  # a list the pipeline's member path takes (the short loop's floats are below 1e290)
        for columns in (lapcli.solve_batch(cost[None], maximize=maximize).col_ind[0],
                        lapcli.solve_batch([cost, cost[:2]], maximize=maximize).col_ind[0],
                        lapcli.batch_linear_assignment(many, maximize=maximize)[299]):
            assert sum(Fraction(float(cost[i, c])) for i, c in enumerate(columns)) == best
    largest = np.array([[np.finfo(np.float64).max, 0.0], [0.0, np.finfo(np.float64).max]])
    wide = np.array([[1.79e308, 8e307, 1.79e308, 0], [1, 1.79e308, 1, 8e307], [1, 1, 0, 1.79e308]])
    summed = np.array([[0, 0, 0, 0], [1, 5e307, 0, -1e308], [0, 5e307, 0, -1e308], [1.7e308, 1.7e308, 1.79e308, 5e307]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        assert lapcli.solve(largest, solver="numpy").objective == 0.0
        assert lapcli.solve(largest, cost_limit=1e308).objective == 0.0
        shifted = np.array([[1e308, 1.79e308], [-1.0, 1.7e308]])  # u + the row offsets passed the range
        peaked = np.array([[1.79e308, 1e308, 1.79e308, 1.0], [5e307, 7.91e-323, -1.0, 1.7e308],
                           [-1.0, 1.0, 1.0, 1.79e308], [7.91e-323, 1.0, 1.7e308, 1.0]])
        for cost, solver, maximize in ((wide, "auto", False), (wide, "numpy", False), (summed, "numpy", False),
                                       (shifted, "numpy", False), (peaked, "scipy", True)):
            # the certificate's slacks, the NumPy engine's zeros and auction, the cap's fsum (OverflowError), the duals
            solution = lapcli.solve(cost, solver=solver, maximize=maximize, certify=True)
            k, m = cost.shape
            totals = [sum(Fraction(float(cost[i, p[i]])) for i in range(k)) for p in itertools.permutations(range(m), k)]
            got = sum(Fraction(float(cost[r, c])) for r, c in zip(solution.row_ind, solution.col_ind))
            gap = (max(totals) - got) if maximize else (got - min(totals))
            assert solution.report.certified and gap <= Fraction(solution.report.certificate["objective_within"])
            assert all(np.isfinite(d).all() for d in solution.duals), (solver, solution.duals)


def test_the_drop_in_hands_scipy_what_lapclis_routes_refuse(monkeypatch):
    """linear_sum_assignment takes what scipy takes: on a GPU machine (simulated) auto's exact
    routes refuse int64 extremes (int64 duals), and the drop-in then returns scipy's own answer,
    as without a GPU (the fallback this guards); float spreads past float64's range, which solve
    refuses, go to scipy by auto's choice at this size, and give its answer too."""
    from lapcli import api

    monkeypatch.setattr(api, "cuda_status", lambda: (True, "simulated"))
    for cost in (np.array([[-2**63, 2**63 - 1], [2**63 - 1, -2**63]], dtype=np.int64),
                 np.array([[-1e308, 1e308], [-1.7e308, 1.7e308]])):
        with pytest.raises(ValueError):
            lapcli.solve(cost)
        rows, cols = lapcli.linear_sum_assignment(cost)
        assert [rows.tolist(), cols.tolist()] == [a.tolist() for a in scipy_lsa(cost)]


def test_float_spreads_beyond_the_float_range_are_refused_not_misread():
    extreme = np.array([[-1e308, 1e308], [-1.7e308, 1.7e308]])  # a row's max − min overflows float64
    with pytest.raises(ValueError, match="overflows float64"):
        lapcli.solve(extreme, solver="numpy")
    with pytest.raises(ValueError, match="overflows float64"):
        lapcli.solve_batch(extreme[None])
    # scipy, given such costs as they are, returned [0 1 2] here (−1.2e308) for the optimum [1 0 2]
    # (−1.7e308), uncertified: every engine of solve refuses them, as the batch forms do
    misread = np.array([[5e307, -1.7e308, 1.7e308], [1.7e308, 3.0, 5e307], [2.0, 3.0, -1.7e308]])
    for cost in (extreme, misread):
        for solver in ("auto", "scipy"):
            with pytest.raises(ValueError, match="overflows float64"):
                lapcli.solve(cost, solver=solver, certify=True)
    forbidden = np.array([[0, np.inf, 1], [3e38, 3e38, 3e38], [1, 1, 0]], np.float32)  # sentinel beyond float32
    with pytest.raises(ValueError, match="ask for dtype float64"):  # float32 asked for: refused
        lapcli.solve_batch(forbidden[None], dtype="float32")
    for dtype in (None, "float64"):  # else float64 work, as scipy solves them (FLT_MAX beside +inf is common)
        solved = lapcli.solve_batch(forbidden[None], dtype=dtype)
        assert solved.objectives[0] == pytest.approx(3e38 + 1, rel=1e-6) and solved.report.dtype == "float64"
    for solver in ("numpy", "scipy", "auto"):
        solution = lapcli.solve(forbidden, solver=solver)
        assert solution.objective == pytest.approx(3e38 + 1, rel=1e-6) and solution.report.certified
    assert lapcli.batch_linear_assignment(forbidden[None]).tolist() == [list(scipy_lsa(forbidden)[1])]
    with pytest.raises(ValueError, match="costs overflow float32"):  # finite float64, infinite once narrowed
        lapcli.solve_batch(np.array([[[1e300, 0.0], [0.0, 1.0]]]), dtype="float32")


@pytest.mark.parametrize("cost, error, message", [
    ([["1", "2"], ["3", "4"]], ValueError, "costs given as text"),  # scipy converts these; lapcli reads no text
    ([[1, "x"], [3, 4]], ValueError, "costs given as text"),
    (np.array([["1", "2"], ["3", "4"]]), TypeError, "costs given as text"),
    (np.array([[1, "x"], [3, 4]], dtype=object), TypeError, "costs given as text"),
    ([[1, None], [2, 3]], ValueError, "None among the costs"),
    (np.array([[1, None], [2, 3]]), TypeError, "None among the costs"),
    ([[2**64, 1], [1, 2**64]], TypeError, "integers past 64 bits"),
    ([[1.5, 2**70], [2, 3]], TypeError, "integers past 64 bits"),
    (np.array([[1, 2], [3, 4]], dtype=object), TypeError, "held as Python objects")])
def test_costs_numpy_holds_as_objects_or_text_are_refused_in_words(cost, error, message):
    """scipy's exception for the same input (a list of text or None: the ValueError of its
    conversion; an array it cannot cast, or objects: TypeError), saying what was found rather than
    "Cannot cast array data from dtype('O')" (lapcli rounds no integer and reads no text); one
    matrix, a list of one, a ragged list."""
    try:
        scipy_lsa(cost)
    except (TypeError, ValueError) as scipy_error:
        assert isinstance(scipy_error, error)
    for call in (lapcli.solve, lambda c: lapcli.solve_batch([c]), lambda c: lapcli.solve_batch([c, np.zeros((2, 3))])):
        with pytest.raises(error, match=message) as raised:
            call(cost)
        assert not (error is TypeError and isinstance(raised.value, ValueError))


def test_a_list_of_nested_lists_beside_arrays_is_one_host_batch():
    cost = np.array([[4, 1, 3], [2, 0, 5]])  # was "one array library, got builtins, numpy"
    for other in ([[1, 2], [3, 0]], [[1, 2], [3, 0], [5, 5]]):
        got = lapcli.batch_linear_assignment([cost, other])
        assert np.array_equal(got[0], scipy_lsa(cost)[1]) and got[1].tolist() == [0, 1, -1][:len(other)]
    with pytest.raises(ValueError, match="problem 1 of the list is not a matrix: its rows differ in length"):
        lapcli.solve_batch([np.zeros((2, 2)), [[1, 2], [3]]])
    with pytest.raises(ValueError, match="every problem of a list must be a matrix"):
        lapcli.batch_linear_assignment([np.zeros((2, 2)), 3.0])


def _sparse_inputs():
    import scipy.sparse

    made = [scipy.sparse.csr_matrix(np.eye(3)), scipy.sparse.coo_array(np.eye(3))]
    try:
        import torch
    except (ImportError, OSError):  # not installed, or its libraries missing: the module still collects
        return made
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Sparse CSR tensor support is in beta state"
        return [*made, torch.eye(3).to_sparse(), torch.eye(3).to_sparse_csr()]


@pytest.mark.parametrize("sparse", _sparse_inputs(), ids=lambda x: type(x).__name__ + str(getattr(x, "layout", "")))
def test_sparse_costs_or_points_are_refused_by_name(sparse):
    """A scipy.sparse matrix read as one object gave NumPy's "setting an array element with a
    sequence" (scipy's own message) or "got a 0 array"; a sparse tensor torch's words. Every entry
    point names it, and says an absent entry would read as 0, not as a forbidden pair."""
    calls = {"linear_sum_assignment": lambda: lapcli.linear_sum_assignment(sparse),
             "solve": lambda: lapcli.solve(sparse), "solve_batch": lambda: lapcli.solve_batch(sparse),
             "a list": lambda: lapcli.solve_batch([np.eye(3), sparse]),
             "a list with sizes": lambda: lapcli.solve_batch([np.eye(3), sparse], sizes=([2, 2], [2, 2])),
             "a list to match": lambda: lapcli.match([np.eye(3), sparse], [3, 3]),
             "batch_linear_assignment": lambda: lapcli.batch_linear_assignment([sparse])}
    named = type(sparse).__name__ if type(sparse).__name__ != "Tensor" else f"tensor ({sparse.layout})"
    for name, call in calls.items():
        with pytest.raises(lapcli.LapInputError, match=rf"are a sparse {re.escape(named)}: .*absent entry") as seen:
            call()
        assert ("problem 1 of the list's" in str(seen.value)) == name.startswith("a list"), name
    with pytest.raises(lapcli.LapInputError, match="the points of b are a sparse .*dense coordinates"):
        lapcli.solve_points(np.eye(3), sparse)


@pytest.mark.parametrize("kind", ["meta", "quantized", "nested", "jagged", "mkldnn", "bits8", "complex32"])
def test_tensors_whose_values_numpy_cannot_read_are_refused_by_name(kind):
    """A meta-device tensor (no values) or a quantized one raised NumPy's bare TypeError ("can't
    convert meta device type tensor to numpy", "Got unsupported ScalarType QUInt8") from every call;
    a nested tensor torch's RuntimeError ("NestedTensorImpl doesn't support sizes"), an mkldnn one
    "can't convert Mkldnn layout tensor", a type NumPy lacks "unsupported ScalarType Bits8"."""
    torch = pytest.importorskip("torch", reason="torch is an optional peer")
    if kind == "meta":
        stack, error, words = torch.empty(2, 3, 3, device="meta"), lapcli.LapInputError, "on the meta device, which holds no"
    elif kind in ("nested", "jagged"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch calls nested tensors a prototype
            stack = torch.nested.nested_tensor([torch.rand(3, 3), torch.rand(3, 3)],
                                               **({"layout": torch.jagged} if kind == "jagged" else {}))
        error, words = lapcli.LapInputError, r"a nested \(ragged\) tensor: give its matrices as a list \(tensor.unbind"
    elif kind == "mkldnn":
        stack, error, words = torch.rand(2, 3, 3).to_mkldnn(), lapcli.LapInputError, "layout _mkldnn: .to_dense"
    elif kind in ("bits8", "complex32"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch calls complex32 experimental
            stack = torch.zeros(2, 3, 3, dtype=getattr(torch, kind))
        error, words = TypeError, f"a tensor of {kind} cannot be read: convert it to a NumPy type"
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # torch deprecates the quantized types
            stack = torch.quantize_per_tensor(torch.rand(2, 3, 3), 0.1, 0, torch.quint8)
        error, words = TypeError, r"a quantized tensor \(quint8\): .dequantize\(\) it first"
    calls = [lambda: lapcli.solve_batch(stack), lambda: lapcli.solve(stack[0]), lambda: lapcli.match(stack, [2, 3]),
             lambda: lapcli.linear_sum_assignment(stack[0]), lambda: lapcli.batch_linear_assignment(stack),
             lambda: lapcli.solve_points(stack[0], stack[1])]
    if kind in ("nested", "jagged", "mkldnn"):  # a member of one is a plain tensor: the whole given as each input
        calls = [lambda: lapcli.solve_batch(stack), lambda: lapcli.solve(stack), lambda: lapcli.match(stack, [2, 3]),
                 lambda: lapcli.linear_sum_assignment(stack), lambda: lapcli.batch_linear_assignment(stack),
                 lambda: lapcli.solve_points(stack, stack)]
    for call in calls:
        with pytest.raises(error, match=words):
            call()
