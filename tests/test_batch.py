"""Batches of problems through one call (CPU engine here; GPU tests in test_cuda_batch.py)."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli import InfeasibleError, batch_linear_assignment, solve_batch


def scipy_loop(stack, maximize=False):
    cols, objectives = [], []
    for cost in stack:
        rows, columns = scipy_lsa(cost, maximize=maximize)
        col = np.full(cost.shape[0], -1)
        col[rows] = columns
        cols.append(col)
        objectives.append(cost[rows, columns].sum())
    return np.array(cols).reshape(len(stack), -1), np.array(objectives)


@pytest.mark.parametrize("shape", [(7, 5, 5), (4, 3, 8), (4, 8, 3), (1, 1, 1), (3, 1, 6), (3, 6, 1)])
@pytest.mark.parametrize("maximize", [False, True])
def test_stack_objectives_equal_a_scipy_loop(rng, shape, maximize):
    for stack in (rng.integers(-100, 100, shape), rng.random(shape)):
        solution = solve_batch(stack, solver="scipy-batch", maximize=maximize)
        _, expected = scipy_loop(stack, maximize)
        assert solution.col_ind.shape == shape[:2]
        if stack.dtype.kind == "i":
            assert solution.objectives.tolist() == expected.tolist()
        else:
            np.testing.assert_allclose(solution.objectives, expected, rtol=1e-12)
        for b in range(shape[0]):  # a valid assignment: distinct columns, −1 only when n > m
            chosen = solution.col_ind[b][solution.col_ind[b] >= 0]
            assert np.unique(chosen).size == chosen.size == min(shape[1:])


def test_empty_and_single_batches(rng):
    empty = solve_batch(np.zeros((0, 4, 4)))
    assert empty.col_ind.shape == (0, 4) and empty.objectives.shape == (0,)
    one = solve_batch(rng.integers(0, 9, (1, 6, 6)))
    assert one.col_ind.shape == (1, 6)
    # nothing to prove, as solve says of an empty matrix (it read "engine scipy-batch gives no duals")
    for stack in (np.zeros((0, 4, 4)), np.zeros((2, 0, 3)), [np.zeros((0, 3))], [np.zeros((0, 2)), np.zeros((3, 0))]):
        report = solve_batch(stack, certify=True).report
        assert not report.certified and report.certificate["why"] == "empty problems: nothing to prove"


def test_infeasible_members_are_named_and_nothing_is_returned(rng):
    stack = rng.random((64, 5, 5))
    for b in (3, 17):
        stack[b, 2, :] = np.inf
    with pytest.raises(InfeasibleError, match=r"cost matrix is infeasible: problems 3, 17 of 64"):
        solve_batch(stack)


def test_a_nan_in_a_stack_names_the_problems_that_hold_it():
    stack = np.ones((30, 3, 4))
    stack[[4, 17], 1, 2] = np.nan
    stack[9, 0, 0] = -np.inf
    with pytest.raises(ValueError, match=r"^matrix contains invalid numeric entries: problems 4, 9, 17 of 30$"):
        solve_batch(stack)


def test_bad_input_is_refused_like_scipy():
    with pytest.raises(ValueError, match="3-D"):
        solve_batch(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="invalid numeric entries"):
        solve_batch(np.full((2, 2, 2), np.nan))
    with pytest.raises(ValueError, match="invalid numeric entries"):
        solve_batch(np.full((2, 2, 2), -np.inf))
    with pytest.raises(ValueError, match="one problem at a time"):
        solve_batch(np.zeros((2, 2, 2)), solver="numpy")


def test_forbidden_entries_per_problem(rng):
    stack = rng.random((10, 6, 9))
    stack[rng.random(stack.shape) < 0.3] = np.inf
    for b in range(10):
        stack[b, np.arange(6), np.arange(6)] = 0.5
    solution = solve_batch(stack)
    assert np.isfinite(stack[np.arange(10)[:, None], np.arange(6)[None, :], solution.col_ind]).all()
    _, expected = scipy_loop(stack)
    np.testing.assert_allclose(solution.objectives, expected)


def test_a_member_without_forbidden_entries_needs_no_room_for_their_marker(rng):
    """Forbidden entries become a marker (k + 2) times a member's spread: a member holding none, whose
    spread leaves no room for one, was refused with the stack (each solved alone); a member that
    holds some and leaves no room, or whose spread overflows, is refused by name."""
    forbidden = np.array([[1.0, np.inf], [np.inf, 1.0]])
    wide = np.array([[1e308, -1e307], [0.0, 1.0]])  # 4 x 1e308 passes float64's range
    for stack in ([forbidden, wide], np.stack([wide, forbidden, forbidden])):
        _, expected = scipy_loop(stack)
        np.testing.assert_array_equal(solve_batch(stack).objectives, expected)
    narrow = [forbidden.astype(np.float32), np.array([[3e38, -3e38], [0, 1]], np.float32)]
    np.testing.assert_allclose(solve_batch(narrow).objectives, scipy_loop(narrow)[1], rtol=1e-7)
    no_room = np.array([[1e308, np.inf], [-1e308, 1.0]])
    with pytest.raises(ValueError, match=r"^problem 1 of 3: finite costs span too wide a range to mark"):
        solve_batch([forbidden, no_room, forbidden])
    with pytest.raises(ValueError, match=r"^problem 1 of 2: the costs' spread \(a row's max − min\) overflows"):
        solve_batch([forbidden, np.array([[1.7e308, -1.7e308], [0.0, 1.0]])])
    ok, wide = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.7e308, -1.7e308], [0.0, 1.0]])
    for members in ([ok, wide, ok], np.stack([ok, wide, ok])):  # nothing forbidden: named all the same
        with pytest.raises(ValueError, match=r"^problem 1 of 3: the costs' spread"):
            solve_batch(members)
    stack = rng.random((4000, 24, 24))  # large enough for the scipy-batch's threads, each its own share's work
    stack[:, 0, 0] = np.inf
    stack[3100, 0, :2] = 1.7e308, -1.7e308
    with pytest.raises(ValueError, match=r"^problem 3100 of 4000: the costs' spread"):
        solve_batch(stack)


def test_ragged_list_keeps_input_order(rng):
    matrices = [rng.integers(0, 50, shape) for shape in ((3, 3), (4, 6), (3, 3), (6, 4))]
    solution = solve_batch(matrices)
    for matrix, cols, objective in zip(matrices, solution.col_ind, solution.objectives):
        rows, columns = scipy_lsa(matrix)
        assert objective == matrix[rows, columns].sum()
        assert len(cols) == matrix.shape[0]


def test_torch_tensors_come_back_as_tensors(rng):
    torch = pytest.importorskip("torch", reason="needs torch (an optional peer: pip install torch)")
    stack = torch.tensor(rng.random((5, 4, 4)), dtype=torch.float32)
    cols = batch_linear_assignment(stack)
    assert isinstance(cols, torch.Tensor) and cols.shape == (5, 4) and cols.dtype == torch.int64
    _, expected = scipy_loop(stack.numpy())
    got = stack.numpy()[np.arange(5)[:, None], np.arange(4)[None, :], cols.numpy()].sum(axis=1)
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_tensor_subclasses_are_torch_tensors(rng):
    """A subclass made outside torch (MONAI's MetaTensor, a user's own) was taken for a NumPy-like
    array: NumPy answers, and a tensor that requires grad failed in numpy()."""
    torch = pytest.importorskip("torch", reason="needs torch (an optional peer: pip install torch)")

    class Tagged(torch.Tensor):
        pass

    plain = torch.tensor(rng.random((4, 3, 5)))
    tagged = plain.clone().requires_grad_().as_subclass(Tagged)
    cols = batch_linear_assignment(tagged)
    assert isinstance(cols, torch.Tensor) and cols.dtype == torch.int64
    assert torch.equal(cols, batch_linear_assignment(plain))
    listed = solve_batch([tagged[0], plain[1, :2]]).col_ind
    assert all(isinstance(c, torch.Tensor) for c in listed)
    rows, columns = lapcli.linear_sum_assignment(tagged[0])
    assert np.array_equal(columns, scipy_lsa(plain[0].numpy())[1])


def test_numpy_in_numpy_out(rng):
    cols = batch_linear_assignment(rng.integers(0, 9, (3, 4, 4)))
    assert isinstance(cols, np.ndarray) and cols.dtype == np.int64


def test_report_counts_problems(rng):
    from lapcli.engines import cuda_status

    report = solve_batch(rng.random((20, 8, 8))).report
    expected = "cuda-batch" if cuda_status()[0] else "scipy-batch"
    assert report.batch == 20 and report.problems_per_second > 0 and report.solver == expected
    assert len(report.to_dict()["objectives"]) == 20 and "auto" in report.reason


def test_a_matrix_and_a_stack_share_one_report_type_with_their_own_fields(rng):
    """One SolveReport: a matrix's JSON has ``objective`` and no batch fields; a stack's has
    ``batch``, ``problems_per_second`` and ``objectives`` and no single ``objective``; the rest
    of the schema is the same."""
    cost = rng.integers(0, 50, (6, 6))
    single = lapcli.solve(cost).report
    stack = solve_batch(np.stack([cost, cost])).report
    assert type(single) is type(stack)
    single_keys, stack_keys = set(single.to_dict()), set(stack.to_dict())
    assert single_keys - stack_keys == {"objective"}
    assert stack_keys - single_keys == {"batch", "problems_per_second", "objectives"}
    assert stack.to_dict()["objectives"] == [single.objective] * 2 and stack.batch == 2 and single.batch is None


def test_single_problem_api_refuses_batch_engines(rng):
    with pytest.raises(ValueError, match="stacks"):
        lapcli.solve(rng.random((4, 4)), solver="scipy-batch")


def test_an_engine_that_checks_entries_itself_gets_them_checked_on_request(monkeypatch, rng):
    """solve_batch skips the finiteness pass for a ``checks_entries`` engine; when the engine
    reports non-finite unchecked entries the entries are checked (bad input refused, forbidden
    entries found) and the engine runs again on the checked problem."""
    import dataclasses
    import types

    from lapcli.engines import registry
    from lapcli.engines.base import BatchEngineResult
    from lapcli.engines.cpu import scipy_batch

    seen = []

    def run_batch(problem, **options):
        checked = problem.forbidden is not None
        seen.append(checked)
        if not checked and not np.isfinite(problem.original).all():
            return BatchEngineResult(col_ind=None, device="cpu", dtype="float64", unchecked_nonfinite=True)
        return scipy_batch.run_batch(problem, **options)

    engine = registry.get("scipy-batch")
    fake = dataclasses.replace(engine, capabilities=dataclasses.replace(engine.capabilities, checks_entries=True),
                               module="fake")
    monkeypatch.setattr(fake.__class__, "load", lambda self: types.SimpleNamespace(run_batch=run_batch))
    monkeypatch.setitem(registry.ENGINES, "scipy-batch", fake)

    finite = rng.random((4, 5, 5))
    assert solve_batch(finite, solver="scipy-batch").col_ind.shape == (4, 5) and seen == [False]
    seen.clear()
    with pytest.raises(ValueError, match="invalid numeric entries"):
        solve_batch(np.where(finite > 0.9, np.nan, finite), solver="scipy-batch")
    assert seen == [False]
    seen.clear()
    forbidden = finite.copy()
    forbidden[2, 1, :] = np.inf
    with pytest.raises(InfeasibleError, match="problem 2 of 4"):
        solve_batch(forbidden, solver="scipy-batch")
    assert seen == [False]
    seen.clear()
    forbidden[2, 1, 0] = 0.5
    solution = solve_batch(forbidden, solver="scipy-batch")
    assert seen == [False, True]
    np.testing.assert_allclose(solution.objectives, scipy_loop(forbidden)[1])


def test_cpu_batches_are_certified_where_it_costs_less_than_the_solve(rng):
    """scipy-batch gives no duals: the pipeline recovers and checks them per problem for problems of
    at least BATCH_CERTIFY_FROM entries (wide, tall, maximised, integers), says why not for small
    ones, and certify=True forces it."""
    from lapcli.duals import BATCH_CERTIFY_FROM

    for stack, maximize in ((rng.random((4, 100, 120)), False), (rng.random((3, 130, 90)), False),
                            (rng.integers(0, 500, (3, 100, 100)), True)):
        assert stack.shape[1] * stack.shape[2] >= BATCH_CERTIFY_FROM
        report = solve_batch(stack, solver="scipy-batch", maximize=maximize).report
        assert report.certified and report.certificate["problems"] == len(stack)
        assert report.certificate["min_slack"] >= -report.certificate["tolerance"]
    small = rng.random((50, 20, 20))
    report = solve_batch(small, solver="scipy-batch").report
    assert not report.certified and "would cost more than solving them" in report.certificate["why"]
    assert solve_batch(small, solver="scipy-batch", certify=True).report.certified
    assert not solve_batch(small, solver="scipy-batch", certify=False).report.certified


def test_a_wrong_cpu_batch_answer_fails_its_certificate(rng, monkeypatch):
    """An engine bug (two rows' columns swapped in one problem) is caught, not returned (with the
    recovery unbounded: within its default budget a wrong answer may only show as too costly)."""
    from lapcli.engines.cpu import scipy_batch

    real = scipy_batch.run_batch

    def spoiled(problem, **kwargs):
        result = real(problem, **kwargs)
        result.col_ind[1, [0, 1]] = result.col_ind[1, [1, 0]]
        result.objectives = None
        return result

    monkeypatch.setattr(scipy_batch, "run_batch", spoiled)
    with pytest.raises(lapcli.SolverError, match="problem 1 failed its optimality certificate"):
        solve_batch(rng.random((3, 100, 100)), solver="scipy-batch", certify=True)


def test_a_wrong_answer_to_a_list_member_fails_naming_the_member(rng, monkeypatch):
    """As a stack's: the member whose columns an engine bug swapped is named in the failure."""
    from lapcli.engines.cpu import scipy_batch

    real = scipy_batch.run_members

    def spoiled(members, **kwargs):
        result = real(members, **kwargs)
        columns = result.columns[1] if result.col_ind is None else result.col_ind[1]
        columns[[0, 1]] = columns[[1, 0]]
        result.objectives = None
        return result

    monkeypatch.setattr(scipy_batch, "run_members", spoiled)
    costs = [rng.random((100, 100)), rng.random((90, 100)), rng.random((80, 80))]
    with pytest.raises(lapcli.SolverError, match="answer to problem 1 failed its optimality certificate"):
        solve_batch(costs, solver="scipy-batch", certify=True)


def test_recovered_duals_that_fail_the_check_name_the_stack_s_problem(rng, monkeypatch):
    """Duals recovered but refused by the check (an engine or recovery bug) name the problem too."""
    from lapcli import certificate, duals

    def refuse_the_third(cost, col_of_row, u, v, tolerance, engine, *args):
        checked.append(engine)
        if len(checked) == 3:
            raise lapcli.SolverError(f"the {engine} engine's answer failed its optimality certificate: (made up)")
        return certificate.certify(cost, col_of_row, u, v, tolerance, engine, *args)

    checked = []
    monkeypatch.setattr(duals, "certify", refuse_the_third)
    with pytest.raises(lapcli.SolverError, match=r"answer to problem 2 failed its optimality certificate: \(made"):
        solve_batch(rng.random((3, 100, 100)), solver="scipy-batch", certify=True)


@pytest.mark.parametrize(("shape", "threads"), [((4000, 24, 24), 2), ((300, 16, 16), 2), ((40, 16, 16), 1),
                                                ((5000, 4, 4), 1), ((3, 64, 64), 1)])
def test_scipy_batch_uses_threads_where_they_measured_faster(rng, monkeypatch, shape, threads):
    """Two threads from 12 × 12 entries a problem and 64 K entries a stack (2-core CI machine:
    4000 × 24 × 24 24.2 ms against 43.8 serial; 4 × 4 problems twice as slow on threads); the
    answers are the loop's either way."""
    from lapcli.engines.cpu import scipy_batch

    monkeypatch.setattr(scipy_batch, "CPUS", 2)
    costs = rng.random(shape)
    solution = lapcli.solve_batch(costs, solver="scipy-batch")
    assert solution.report.details["threads"] == threads
    expected = np.stack([scipy_lsa(c)[1] for c in costs])
    assert np.array_equal(solution.col_ind, expected)


@pytest.fixture
def no_gpu(monkeypatch):
    """batch_linear_assignment as on a machine without a GPU, wherever the tests run."""
    import lapcli.api

    monkeypatch.setattr(lapcli.api, "cuda_status", lambda: (False, "no GPU (test)"))


@pytest.mark.parametrize("maximize", [False, True])
def test_without_a_gpu_small_batches_are_a_plain_scipy_loop(rng, monkeypatch, no_gpu, maximize):
    """Below the pipeline's threads the columns come from scipy on the caller's arrays, not
    through solve_batch (~35 µs a call for two 16 × 16 problems against 5 µs for the loop): the
    same layout (−1 for a tall problem's unassigned rows; one array for a list of one shape) and
    the optimum of every problem."""
    import lapcli.api

    def no_pipeline(*args, **kwargs):
        raise AssertionError("a small batch went through the pipeline")

    monkeypatch.setattr(lapcli.api, "solve_batch", no_pipeline)
    for shape in ((7, 5, 5), (4, 3, 8), (4, 8, 3), (512, 1, 1), (64, 16, 16)):
        for stack in (rng.integers(-100, 100, shape), rng.random(shape), rng.random(shape).astype(np.float32),
                      rng.integers(0, 1000, shape).astype(np.int32)):
            cols = batch_linear_assignment(stack, maximize=maximize)
            expected_cols, expected = scipy_loop(stack, maximize)
            assert cols.dtype == np.int64 and cols.shape == shape[:2]
            assert np.array_equal(cols < 0, expected_cols < 0)
            chosen = np.where(cols >= 0, cols, 0)
            got = np.where(cols >= 0, np.take_along_axis(stack, chosen[:, :, None], axis=2)[:, :, 0], 0).sum(axis=1)
            np.testing.assert_allclose(got, expected, rtol=1e-6)
    ragged = [rng.random((int(r), int(c))) for r, c in rng.integers(0, 9, (40, 2))]
    listed = batch_linear_assignment(ragged, maximize=maximize)
    assert isinstance(listed, list) and len(listed) == 40
    for matrix, cols in zip(ragged, listed):
        rows, columns = scipy_lsa(matrix, maximize=maximize)
        assert len(cols) == matrix.shape[0] and np.array_equal(np.flatnonzero(cols >= 0), rows)
        assert matrix[rows, cols[rows]].sum() == pytest.approx(matrix[rows, columns].sum())
    one_shape = batch_linear_assignment([rng.random((3, 4)) for _ in range(5)], maximize=maximize)
    assert isinstance(one_shape, np.ndarray) and one_shape.shape == (5, 3)


@pytest.mark.parametrize("maximize", [False, True])
def test_without_a_gpu_the_loop_answers_as_the_pipeline_on_large_offsets(rng, no_gpu, maximize):
    """1e6 + multiples of 2^-33: scipy on the costs as given took pairs 2^-33 off the optimum, so a
    batch's answers changed where its size crossed into the pipeline, which reduces float64 rows
    first; the loop reduces them as the pipeline does (stacks, lists, tall members)."""
    def exact_total(matrix, cols):  # the offsets' multiples of 2^-33 the pairs take, summed as integers
        rows = np.flatnonzero(cols >= 0)
        return int(((matrix[rows, cols[rows]] - 1e6) * 2.0**33).round().sum())

    for shape in ((40, 6, 6), (40, 5, 7), (40, 7, 5)):
        stack = 1e6 + rng.integers(0, 8, shape) * 2.0**-33
        piped = lapcli.solve_batch(stack, maximize=maximize).col_ind
        for cols in (batch_linear_assignment(stack, maximize=maximize),
                     np.stack(batch_linear_assignment(list(stack) + [stack[0][:1]], maximize=maximize)[:-1])):
            for matrix, got, best in zip(stack, cols, piped):
                assert exact_total(matrix, got) == exact_total(matrix, best)


def test_without_a_gpu_a_long_list_of_small_members_stays_in_the_loop(rng, monkeypatch, no_gpu):
    """A ragged list goes to the pipeline's second process or thread only where its members are
    large enough to pay for the split (64 entries on average, 150K in all), whatever their count:
    300 members of 1..8 × 1..8 (small ones) and of 10..14 × 10..14 (too few entries in all) are
    the loop's, 300 of 25..40 × 25..40 the pipeline's; all answer as a scipy loop."""
    import lapcli.api
    from lapcli.engines.cpu import scipy_loop as loop_engine

    monkeypatch.setattr(loop_engine, "CPUS", 2)
    calls = []
    solve = lapcli.api.solve_batch
    monkeypatch.setattr(lapcli.api, "solve_batch", lambda *a, **k: calls.append(k) or solve(*a, **k))
    for sides, piped in (((1, 9), False), ((10, 15), False), ((25, 41), True)):
        matrices = [rng.random((int(r), int(c))) for r, c in rng.integers(*sides, (300, 2))]
        calls.clear()
        listed = batch_linear_assignment(matrices)
        assert len(calls) == piped
        for matrix, cols in zip(matrices, listed):
            rows, columns = scipy_lsa(matrix)
            assert np.array_equal(np.flatnonzero(cols >= 0), rows)
            assert matrix[rows, cols[rows]].sum() == pytest.approx(matrix[rows, columns].sum())


def test_without_a_gpu_what_scipy_would_get_wrong_goes_through_the_pipeline(rng, monkeypatch, no_gpu):
    """The loop declines what the pipeline must see: 64-bit integers float64 cannot sum (scipy
    rounds 2^60 + 1 to 2^60 and picks the wrong pair), floats near float64's overflow (scipy's
    sums overflow and its answer is not optimal; the pipeline refuses them), forbidden entries,
    NaN and infeasible members (lapcli's errors name them), and stacks large enough for its
    threads (then uncertified: the columns are all it returns)."""
    import lapcli.api

    big = 2**60
    wide = np.array([[[big, big + 1], [big + 1, big + 3]]], dtype=np.int64)
    assert scipy_lsa(wide[0])[1].tolist() == [0, 1]  # scipy alone: not the optimum
    assert batch_linear_assignment(wide).tolist() == [[1, 0]]
    assert batch_linear_assignment([wide[0], wide[0, :1]])[0].tolist() == [1, 0]
    huge = np.array([[[-9., -4., 2.], [-9., -8., 9.], [8., -9., -3.]]]) * 1e307
    with pytest.raises(ValueError, match="overflows float64"):
        batch_linear_assignment(huge)
    with pytest.raises(ValueError, match="overflows float64"):
        batch_linear_assignment([huge[0], huge[0, :2]])
    # a member not C-contiguous (its values scanned all the same), and two float dtypes
    for listed in ([rng.random((2, 3)), np.asfortranarray(huge[0])],
                   [rng.random((2, 3)).astype(np.float32), huge[0, :2]]):
        with pytest.raises(ValueError, match="overflows float64"):
            batch_linear_assignment(listed)
    with pytest.raises(ValueError, match="overflows float64"):  # the CPU's ragged members, as the stacks
        solve_batch([huge[0], huge[0, :2]])
    assert solve_batch([huge[0] / 10, huge[0, :2] / 10]).col_ind[0].tolist() == [0, 1, 2]
    calls = []
    solve = lapcli.api.solve_batch
    monkeypatch.setattr(lapcli.api, "solve_batch", lambda *a, **k: calls.append(k) or solve(*a, **k))
    forbidden = rng.random((6, 5, 5))
    forbidden[rng.random((6, 5, 5)) < 0.2] = np.inf
    forbidden[:, :, 0] = 0.5  # a feasible column left in every row
    cols = batch_linear_assignment(forbidden)
    assert len(calls) == 1
    assert np.isfinite(np.take_along_axis(forbidden, cols[:, :, None], axis=2)).all()
    np.testing.assert_allclose(np.take_along_axis(forbidden, cols[:, :, None], axis=2).sum(axis=(1, 2)),
                               scipy_loop(forbidden)[1])
    monkeypatch.setattr(lapcli.api, "solve_batch", solve)
    stack = rng.random((30, 3, 4))
    stack[[4, 17], 1, 2] = np.nan
    with pytest.raises(ValueError, match=r"^matrix contains invalid numeric entries: problems 4, 17 of 30$"):
        batch_linear_assignment(stack)
    stack = rng.random((64, 5, 5))
    stack[3, 2, :] = np.inf
    with pytest.raises(InfeasibleError, match=r"^cost matrix is infeasible: problem 3 of 64$"):
        batch_linear_assignment(stack)
    calls = []
    solve = lapcli.api.solve_batch
    monkeypatch.setattr(lapcli.api, "solve_batch", lambda *a, **k: calls.append(k) or solve(*a, **k))
    large = rng.random((300, 16, 16))  # 76,800 entries: the pipeline's threads (two or more cores)
    cols = batch_linear_assignment(large)
    from lapcli.engines.cpu.scipy_batch import CPUS

    assert calls == ([{"maximize": False, "objectives": False, "certify": False}] if CPUS > 1 else [])
    np.testing.assert_allclose(np.take_along_axis(large, cols[:, :, None], axis=2).sum(axis=(1, 2)),
                               scipy_loop(large)[1])


@pytest.mark.parametrize("maximize", [False, True])
def test_a_threaded_stack_builds_each_share_s_work_in_its_thread(rng, monkeypatch, maximize):
    """Two threads, each building the work of its own half (scipy-batch): tall problems, with
    forbidden entries in the second half only, give a scipy loop's objectives; an integer half that needs int64
    work beside one that does not is reported int64; a spread past float64 in the second half is
    refused, and NaN there named, as the whole stack's work refuses them."""
    from lapcli.engines.cpu import scipy_batch

    monkeypatch.setattr(scipy_batch, "CPUS", 2)
    stack = rng.random((400, 20, 16))  # tall: the work is transposed
    forbidden = np.inf if not maximize else -np.inf
    stack[[250, 390], 0, :5] = forbidden  # the second half only
    solution = solve_batch(stack, maximize=maximize, solver="scipy-batch")
    assert solution.report.details["threads"] == 2
    expected = [c[scipy_lsa(c, maximize=maximize)].sum() for c in stack]
    np.testing.assert_allclose(solution.objectives, expected, rtol=1e-12)
    integers = rng.integers(0, 9, (400, 16, 16))
    integers[300] = rng.integers(0, 2**40, (16, 16))  # its half's work is int64
    solution = solve_batch(integers, maximize=maximize, solver="scipy-batch")
    assert solution.report.dtype == "int64"
    assert [int(o) for o in solution.objectives] == [int(c[scipy_lsa(c, maximize=maximize)].sum()) for c in integers]
    wide = rng.random((400, 16, 16))
    wide[350, 2, :2] = [-1.7e308, 1.7e308]
    with pytest.raises(lapcli.LapInputError, match="overflows float64"):
        solve_batch(wide, maximize=maximize, solver="scipy-batch")
    wide[350, 2, :2] = np.nan
    with pytest.raises(ValueError, match="invalid numeric entries: problem 350 of 400"):
        solve_batch(wide, maximize=maximize, solver="scipy-batch")


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_headroom_is_each_member_s_own(order):
    """Costs near float64's largest in one member are scaled down for scipy's sums; one scale for the
    whole stack flushed another member's subnormal costs to 0, and its answer was not optimal (3e-323
    against 1e-323), certified at the stack's tolerance."""
    tiny = 5e-324
    members = [np.array([[1.7e308, 0.0], [0.0, 1.7e308]]), np.array([[3 * tiny, tiny], [tiny, 3 * tiny]])]
    stack = np.stack([members[b] for b in order])
    for costs in (stack, list(stack)):
        solution = lapcli.solve_batch(costs, solver="scipy-batch")
        for b, cost in enumerate(stack):
            rows, cols = scipy_lsa(cost)
            assert solution.col_ind[b].tolist() == cols.tolist() and solution.objectives[b] == cost[rows, cols].sum()


def test_integer_stacks_solved_in_float_work_keep_integer_objectives(rng):
    """The objectives are sums of the caller's costs: integers asked to be solved as float32 or
    float64 still sum to exact integers (cuda-batch returned its float32 launch's float64 sums)."""
    from lapcli.engines import cuda_status

    stack = rng.integers(-1000, 1000, (6, 5, 7)).astype(np.int32)
    expected = [int(c[scipy_lsa(c)].sum()) for c in stack]
    for solver in ("auto", "scipy-batch", *(("cuda-batch",) if cuda_status()[0] else ())):
        for dtype in ("float32", "float64"):
            solution = solve_batch(stack, solver=solver, dtype=dtype)
            assert solution.objectives.dtype.kind == "i", (solver, dtype, solution.objectives.dtype)
            assert solution.objectives.tolist() == expected, (solver, dtype)
