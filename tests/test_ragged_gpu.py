"""Ragged batches on the GPU: one launch of the batch kernel for a list of any shapes, a padded
stack with sizes and DETR's matcher block, certified, on CuPy and torch CUDA input."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli

pytestmark = pytest.mark.gpu


def loop_objectives(matrices, maximize=False):
    return [matrix[scipy_lsa(matrix, maximize=maximize)].sum() if matrix.size else 0 for matrix in matrices]


def check(matrices, col_ind, objectives, maximize=False):
    for matrix, cols, objective, expected in zip(matrices, col_ind, objectives, loop_objectives(matrices, maximize)):
        rows = np.flatnonzero(cols >= 0)
        assert len(rows) == min(matrix.shape) and len(set(cols[rows].tolist())) == len(rows)
        assert matrix[rows, cols[rows]].sum() == pytest.approx(expected)
        assert objective == pytest.approx(expected)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("maximize", [False, True])
def test_a_cupy_list_of_any_shapes_is_one_certified_launch(rng, dtype, maximize):
    import cupy

    matrices = []
    for _ in range(120):
        shape = tuple(int(s) for s in rng.integers(0, 41, 2))
        matrices.append((rng.integers(0, 1000, shape) if dtype.startswith("int") else rng.random(shape)).astype(dtype))
    if dtype.startswith("float") and not maximize:
        matrices[5] = matrices[5].copy()
        if matrices[5].size > 1:
            matrices[5][0, 0] = np.inf
    solution = lapcli.solve_batch([cupy.asarray(m) for m in matrices], maximize=maximize)
    report = solution.report
    assert report.solver == "cuda-batch" and report.certified and report.details["launches"] == 1
    assert all(isinstance(c, cupy.ndarray) for c in solution.col_ind)
    check(matrices, [c.get() for c in solution.col_ind], solution.objectives, maximize)


def test_detr_block_on_torch_cuda_matches_a_scipy_loop(rng):
    torch = pytest.importorskip("torch")
    batch, queries = 16, 300
    counts = rng.integers(0, 60, batch)
    counts[3] = 0  # an image without targets
    block = torch.rand((batch, queries, int(counts.sum())), device="cuda", dtype=torch.float32)
    pairs = lapcli.match(block, torch.tensor(counts))
    host = block.cpu().numpy()
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for i, (rows, cols) in enumerate(pairs):
        assert rows.is_cuda and rows.dtype == torch.int64 and len(rows) == counts[i]
        matrix = host[i, :, starts[i]:starts[i] + counts[i]]
        expected_rows, expected_cols = scipy_lsa(matrix)
        assert np.all(np.diff(rows.cpu().numpy()) > 0)
        assert matrix[rows.cpu().numpy(), cols.cpu().numpy()].sum() == pytest.approx(
            matrix[expected_rows, expected_cols].sum(), rel=1e-6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_padded_stack_with_sizes_on_the_gpu_ignores_the_padding(rng, dtype):
    """NaN and −inf outside each problem's corner are never read: float64 through the packed work
    stack, float32 by the in-place launch."""
    import cupy

    stack = rng.random((50, 30, 40)).astype(dtype)
    rows, cols = rng.integers(0, 31, 50), rng.integers(0, 41, 50)
    garbage = stack.copy()
    for b in range(50):
        garbage[b, rows[b]:, :] = np.nan
        garbage[b, :, cols[b]:] = -np.inf
    solution = lapcli.solve_batch(cupy.asarray(garbage), sizes=(rows, cols))
    assert solution.col_ind.shape == (50, 30) and solution.report.certified
    assert (solution.report.details.get("members") == "read in place") == (dtype == "float32")
    matrices = [stack[b, :rows[b], :cols[b]].astype(np.float64) for b in range(50)]
    check(matrices, [solution.col_ind[b, :rows[b]].get() for b in range(50)], solution.objectives)


@pytest.mark.parametrize("kind", ["int32", "int64", "float32", "float64"])
@pytest.mark.parametrize("maximize", [False, True])
def test_the_ragged_kernels_equal_their_numpy_twins(rng, kind, maximize):
    """kernels/ragged.cu's pack, unpack and pairs against lapcli.ragged's NumPy twins: the same
    work stack (padding columns, dummy rows, transposed members, the integer forbidden value),
    the same rows and columns back."""
    import cupy

    from lapcli import ragged

    matrices = [(rng.integers(-500, 500, shape) if kind.startswith("int") else rng.random(shape)).astype(kind)
                for shape in rng.integers(0, 30, (40, 2))]
    host, device = ragged.from_list(matrices), ragged.from_list([cupy.asarray(m) for m in matrices])
    twin, packed = ragged.pack(host, maximize), ragged.pack(device, maximize)
    assert packed.table is not None and twin.table is None
    assert packed.stack.dtype == twin.stack.dtype and np.array_equal(packed.stack.get(), twin.stack)
    answer = lapcli.solve_batch(twin.stack, maximize=maximize, solver="scipy-batch").col_ind
    out_twin = ragged.unpack(twin, answer, host)
    out = ragged.unpack(packed, cupy.asarray(answer), device)
    assert np.array_equal(out.get(), out_twin)
    counts = np.minimum(host.rows, host.cols)
    for got, want in zip(ragged.pairs(out, packed, counts), ragged.pairs(out_twin, None, counts)):
        assert np.array_equal(got.get(), want)


def test_device_lists_read_in_place_or_concatenated_give_the_same_answers(rng):
    """A CuPy list of one dtype with contiguous rows is read where it lies (no concatenation); mixed
    dtypes and column-strided members are concatenated first: the answers are the same."""
    import cupy

    from lapcli import ragged

    matrices = [rng.integers(0, 300, tuple(shape)) for shape in rng.integers(1, 25, (30, 2))]
    in_place = [cupy.asarray(m, dtype=np.int32) for m in matrices]
    mixed = [cupy.asarray(m, dtype=np.int32 if i % 2 else np.int64) for i, m in enumerate(matrices)]
    strided = [cupy.asfortranarray(cupy.asarray(m, dtype=np.int32)) for m in matrices]
    assert ragged.from_list(in_place).flat is None
    assert ragged.from_list(mixed).flat is not None
    reference = lapcli.solve_batch(matrices, solver="scipy-batch").objectives
    for members in (in_place, mixed, strided):
        solution = lapcli.solve_batch(members)
        assert solution.report.solver == "cuda-batch"
        assert np.array_equal(np.asarray(solution.objectives, dtype=np.int64), reference.astype(np.int64))


def test_a_device_list_of_one_shape_is_one_stack(rng):
    import cupy

    matrices = [rng.random((5, 7)) for _ in range(4)]
    solution = lapcli.solve_batch([cupy.asarray(m) for m in matrices])
    assert isinstance(solution.col_ind, cupy.ndarray) and solution.col_ind.shape == (4, 5)
    check(matrices, solution.col_ind.get(), solution.objectives)


@pytest.mark.parametrize("shape", [(6, 9), (9, 6)])
def test_a_torch_list_of_one_shape_answers_as_its_stack(rng, shape, monkeypatch):
    """batch_linear_assignment on a list of torch CUDA matrices of one shape (wide, tall) takes the
    lean launch and answers as their stack does: one (B, n) tensor, −1 on a tall one's spare rows."""
    torch = pytest.importorskip("torch")
    from lapcli import api

    matrices = [torch.as_tensor(rng.random(shape).astype(np.float32), device="cuda") for _ in range(5)]
    expected = lapcli.batch_linear_assignment(torch.stack(matrices)).cpu().numpy()
    monkeypatch.setattr(api, "solve_batch", lambda *args, **kwargs: pytest.fail("not the lean launch"))
    found = lapcli.batch_linear_assignment(matrices)
    assert torch.is_tensor(found) and found.is_cuda and tuple(found.shape) == (5, shape[0])
    assert np.array_equal(found.cpu().numpy(), expected)


def test_a_torch_cuda_list_mixing_integers_and_floats_solves_each_exactly():
    """As on the CPU (tests/test_ragged.py): int32 costs beside a float32 member are not stacked
    as float32, where 2^25 + 1 rounds; the answer is one (B, n) tensor on the device."""
    torch = pytest.importorskip("torch")
    from .test_ragged import exact_columns

    first = torch.tensor([[2**25 + 1, 2**25], [2**25, 2**25 + 1]], dtype=torch.int32, device="cuda")
    matrices = [first, torch.zeros((2, 2), device="cuda")]
    expected = exact_columns(first.cpu().numpy())
    for found in (lapcli.solve_batch(matrices).col_ind, lapcli.batch_linear_assignment(matrices)):
        assert torch.is_tensor(found) and found.is_cuda and tuple(found.shape) == (2, 2)
        assert found[0].tolist() == expected


def test_host_members_with_no_exact_common_type_are_solved_exactly_or_refused():
    """int64 costs past 2^53 beside a float member have no type to pack in one GPU stack (float64
    rounds them): ``auto`` leaves them to scipy, each exact; cuda-batch asked for refuses them."""
    from lapcli.errors import LapInputError

    from .test_ragged import exact_columns

    first = np.array([[2**60 + 1, 2**60], [2**60, 2**60 + 3]])
    for matrices in ([first, np.zeros((2, 2))], [first, np.zeros((3, 2))]):
        solution = lapcli.solve_batch(matrices)
        assert solution.report.solver == "scipy-batch"
        assert np.asarray(solution.col_ind[0]).tolist() == exact_columns(first)
        with pytest.raises(LapInputError, match="too wide"):
            lapcli.solve_batch(matrices, solver="cuda-batch")


@pytest.mark.parametrize("library", ["numpy", "cupy"])
@pytest.mark.parametrize("maximize", [False, True])
def test_integers_too_wide_for_the_padded_stack_are_solved_each_exactly_under_auto(rng, library, maximize):
    """int64 members near 2^60 of several shapes: maximised, the GPU's padded stack (dummy rows
    cost 0, padding columns one below the least cost) spans too wide a range for exact int64
    duals. ``auto`` then solves each member in its own type, as the CPU does, and answers in the
    members' library; cuda-batch asked for refuses them. Minimised, the stack holds them."""
    from lapcli.errors import TooWideError

    narrow = [rng.integers(-50, 50, (int(r), int(c))) for r, c in rng.integers(1, 30, (60, 2))]
    wide = [m + 2**60 for m in narrow]
    members = wide if library == "numpy" else [__import__("cupy").asarray(m) for m in wide]
    solution = lapcli.solve_batch(members, maximize=maximize)
    for matrix, small, cols, objective in zip(wide, narrow, solution.col_ind, solution.objectives):
        assert type(cols) is type(members[0])
        cols = np.asarray(cols.get() if library == "cupy" else cols)
        rows = np.flatnonzero(cols >= 0)
        assert len(rows) == min(matrix.shape) and len(set(cols[rows].tolist())) == len(rows)
        best = small[scipy_lsa(small, maximize=maximize)].sum()  # a constant shift keeps the optima
        assert sum(map(int, matrix[rows, cols[rows]])) == int(objective) == int(best) + 2**60 * len(rows)
    if maximize:
        assert solution.report.solver == "scipy-batch" and "int64 duals" in solution.report.reason
        assert "narrow their range" not in solution.report.reason  # solved: the refusal's advice is not
        with pytest.raises(TooWideError, match="too wide"):
            lapcli.solve_batch(members, maximize=True, solver="cuda-batch")
    else:
        assert solution.report.solver == "cuda-batch"


def random_members(rng, count, dtype, most=40):
    """Matrices of drawn shapes (empty, tall, wide and square among them) of ``dtype``."""
    shapes = [tuple(int(s) for s in rng.integers(0, most + 1, 2)) for _ in range(count)]
    shapes[:4] = [(0, 5), (7, 0), (most, 3), (6, 6)]
    if dtype == "bool":
        return [rng.random(shape) < 0.5 for shape in shapes]
    return [(rng.random(shape) * 1000 if dtype.startswith("float") else rng.integers(0, 250, shape)).astype(dtype)
            for shape in shapes]


@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "uint8", "bool"])
def test_members_are_read_in_place_and_agree_with_the_packed_stack(rng, dtype, monkeypatch):
    """cuda-batch's in-place launch (lapcli.engines.cuda.batch_members) on a CuPy list, a torch list
    and a host list: the loop's objectives, every member's rows matched, the same objectives as the
    packed work stack the pipeline falls back to."""
    import cupy


    matrices = random_members(rng, 90, dtype)
    inputs = {"cupy": [cupy.asarray(m) for m in matrices], "host": matrices}
    torch = None
    try:
        import torch
    except ImportError:
        pass
    if torch is not None and torch.cuda.is_available() and dtype != "uint8":
        inputs["torch"] = [torch.as_tensor(m).cuda() for m in matrices]
    as_float = [m.astype(np.float64) for m in matrices]
    answers = {}
    for name, members in inputs.items():
        solution = lapcli.solve_batch(members, solver="cuda-batch")
        report = solution.report
        assert report.certified and report.details.get("members") == "read in place", (name, report.details)
        cols = [c.get() if hasattr(c, "get") else np.asarray(c.cpu() if hasattr(c, "cpu") else c)
                for c in solution.col_ind]
        check(as_float, cols, solution.objectives)
        answers[name] = np.asarray(solution.objectives, dtype=np.float64)
    monkeypatch.setattr("lapcli.engines.cuda.batch.run_members", lambda *args, **kwargs: None)
    packed = lapcli.solve_batch(inputs["cupy"], solver="cuda-batch")
    assert "padded" in packed.report.details and "members" not in packed.report.details
    for name, objectives in answers.items():
        assert np.allclose(objectives, np.asarray(packed.objectives, dtype=np.float64), rtol=1e-6), name


@pytest.mark.parametrize("case", ["maximize", "float64", "int64", "inf", "nan"])
def test_what_the_in_place_launch_does_not_take_is_packed(rng, case):
    """Maximised members, float64 and int64 work, and members with an infinity (forbidden pairs)
    go to the packed work stack; NaN is refused there as bad input, naming the member."""
    import cupy

    matrices = [rng.random(tuple(shape)).astype(np.float32) for shape in rng.integers(1, 30, (20, 2))]
    if case in ("float64", "int64"):
        matrices = [(m * 1000).astype(case) for m in matrices]
    if case in ("inf", "nan"):
        matrices[7] = matrices[7].copy()
        matrices[7][0, 0] = np.inf if case == "inf" else np.nan
    members = [cupy.asarray(m) for m in matrices]
    if case == "nan":
        with pytest.raises(lapcli.LapInputError, match="7"):
            lapcli.solve_batch(members)
        return
    solution = lapcli.solve_batch(members, maximize=case == "maximize")
    assert "padded" in solution.report.details and solution.report.certified
    check(matrices, [c.get() for c in solution.col_ind], solution.objectives, case == "maximize")


def test_match_pairs_come_from_the_solve_launch_and_equal_the_twins(rng):
    """lapcli.match on a CuPy block: the pairs the in-place launch writes equal lapcli.ragged.pairs
    of its own columns (the NumPy twin), image after image, queries in order."""
    import cupy

    from lapcli import ragged
    from lapcli.pipeline import solve_members_raw

    counts = rng.integers(0, 70, 24)
    counts[:3] = [0, 64, 1]
    block = cupy.asarray(rng.random((24, 50, int(counts.sum()))).astype(np.float32))  # some images have k > Q
    members = ragged.from_block(block, counts)
    answer = solve_members_raw(members, pairs=True, objectives=False)
    (rows, cols), report = answer.pairs, answer.report
    assert report.details.get("members") == "read in place" and report.certified
    twin_rows, twin_cols = ragged.pairs(answer.col_ind.get(), None, np.minimum(members.rows, members.cols))
    assert np.array_equal(rows.get(), twin_rows) and np.array_equal(cols.get(), twin_cols)
    pairs = lapcli.match(block, counts)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    host = block.get()
    for i, (image_rows, image_cols) in enumerate(pairs):
        matrix = host[i, :, starts[i]:starts[i] + counts[i]].astype(np.float64)
        assert len(image_rows) == min(matrix.shape) and np.all(np.diff(image_rows.get()) > 0)
        expected = matrix[scipy_lsa(matrix)].sum() if matrix.size else 0.0
        assert matrix[image_rows.get(), image_cols.get()].sum() == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_a_tall_device_stack_is_read_through_its_transpose(rng, dtype):
    """A (B, n, m) device stack with n > m (DETR's queries × targets, padded) goes to the in-place
    launch, which reads each problem through its transpose: no transposed copy, the caller's
    columns straight from the kernel. Maximised, it takes the work stack (transposed, negated)."""
    import cupy

    stack = (rng.random((30, 40, 12)) * (1000 if dtype == "int32" else 1)).astype(dtype)
    matrices = [s.astype(np.float64) for s in stack]
    for maximize in (False, True):
        solution = lapcli.solve_batch(cupy.asarray(stack), maximize=maximize)
        assert solution.report.certified and solution.col_ind.shape == (30, 40)
        assert (solution.report.details.get("members") == "read in place") == (not maximize)
        check(matrices, solution.col_ind.get(), solution.objectives, maximize)


@pytest.mark.parametrize("most", [12, 300])
def test_pairs_and_lists_in_half_warp_and_block_layouts(rng, most):
    """The in-place launch's two outputs beside the caller's columns, a list's flat answer and
    match's pairs, where members up to 12 wide share a warp two by two (16-thread groups) and where
    300 wide ones take a block each (only its first warp compacts the pairs)."""
    import cupy

    from lapcli import ragged
    from lapcli.pipeline import solve_members_raw

    matrices = [rng.random((int(r), int(c))).astype(np.float32) for r, c in rng.integers(1, most + 1, (40, 2))]
    solution = lapcli.solve_batch([cupy.asarray(m) for m in matrices])
    assert solution.report.details.get("members") == "read in place"
    check([m.astype(np.float64) for m in matrices], [c.get() for c in solution.col_ind], solution.objectives)
    counts = rng.integers(0, most + 1, 30)
    block = cupy.asarray(rng.random((30, most, int(counts.sum()))).astype(np.float32))
    members = ragged.from_block(block, counts)
    answer = solve_members_raw(members, pairs=True, objectives=False)
    assert answer.report.details.get("members") == "read in place"
    twin = ragged.pairs(answer.col_ind.get(), None, np.minimum(members.rows, members.cols))
    assert all(np.array_equal(got.get(), want) for got, want in zip(answer.pairs, twin))


def test_a_requested_dtype_takes_the_packed_stack_on_the_gpu(rng):
    """A dtype other than the members' own is honoured by the packed work stack (the in-place
    launch reads the members as they are), or refused as for a stack."""
    import cupy

    matrices = [rng.random(tuple(shape)).astype(np.float32) for shape in rng.integers(1, 20, (16, 2))]
    members = [cupy.asarray(m) for m in matrices]
    solution = lapcli.solve_batch(members, dtype="float64")
    assert solution.report.dtype == "float64" and "padded" in solution.report.details
    check([m.astype(np.float64) for m in matrices], [c.get() for c in solution.col_ind], solution.objectives)
    with pytest.raises(lapcli.LapInputError, match="not integers"):
        lapcli.solve_batch(members, dtype="int32")


def test_a_batch_of_empty_members_reports_a_plain_certificate():
    """Images without targets only: every group returns at once, nothing is proved or summed (no
    NaN from slots no problem wrote), and the report says so as the CPU's and a single solve's do."""
    import cupy

    block = cupy.asarray(np.zeros((3, 20, 0), dtype=np.float32))
    assert [len(rows) for rows, _ in lapcli.match(block, [0, 0, 0])] == [0, 0, 0]
    solution = lapcli.solve_batch([cupy.zeros((4, 0), dtype=np.float32), cupy.zeros((0, 2), dtype=np.float32)])
    assert not solution.report.certified and list(solution.objectives) == [0, 0]
    assert solution.report.certificate == {"checked": None, "why": "empty problems: nothing to prove"}
    assert [c.shape for c in solution.col_ind] == [(4,), (0,)] and int(solution.col_ind[0].max()) == -1


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_staged_partly_staged_and_in_place_members_give_the_same_certified_answers(rng, dtype, monkeypatch):
    """The ragged launch copies its members' rows into shared memory (kernels/batch_lap.cu,
    "Staging"): wholly for small members, the first rows only for a member larger than a block's
    share (a 300 × 300 float32 member is 352 KB), none when staging is off. Every way gives the
    scipy loop's objectives, certified, and the same answers for tall, wide and square members."""
    import cupy

    from lapcli.cuda import batch_lap

    shapes = [(300, 300), (300, 37), (37, 300), (290, 300), (300, 1), (1, 300), (5, 5), (0, 7), (120, 300)]
    if dtype == "int32":
        matrices = [rng.integers(0, 50, shape).astype(np.int32) for shape in shapes]
    else:
        matrices = [rng.random(shape).astype(np.float32) for shape in shapes]
    device = [cupy.asarray(m) for m in matrices]
    answers = {}
    for staging in (True, False):
        monkeypatch.setattr(batch_lap, "STAGE_MEMBERS", staging)
        solution = lapcli.solve_batch(device, solver="cuda-batch")
        report = solution.report
        assert report.certified and report.details.get("members") == "read in place"
        assert ("staged_bytes" in report.details) == staging
        cols = [c.get() for c in solution.col_ind]
        check([m.astype(np.float64) for m in matrices], cols, solution.objectives)
        answers[staging] = np.asarray(solution.objectives, dtype=np.float64)
    assert np.allclose(answers[True], answers[False], rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_a_torch_matcher_block_takes_the_lean_launch_and_answers_as_the_generic_path(rng, dtype, monkeypatch):
    """lapcli.match on a torch CUDA block (lapcli.engines.cuda.batch_torch): images without
    targets, with more targets than queries and one full image; pairs on the GPU, int64, sorted by
    query, each image the scipy loop's objective, and the same pairs as the generic path."""
    torch = pytest.importorskip("torch")
    from lapcli import ragged

    batch, queries = 12, 40
    counts = rng.integers(0, 30, batch)
    counts[2], counts[5], counts[7] = 0, 55, queries
    high = 1000 if dtype == "int32" else None
    host = (rng.integers(0, high, (batch, queries, int(counts.sum()))) if high
            else rng.random((batch, queries, int(counts.sum())))).astype(dtype)
    block = torch.as_tensor(host, device="cuda")
    generic = ragged.from_block

    def not_taken(*args):
        raise AssertionError("the lean launch should have answered")

    monkeypatch.setattr(ragged, "from_block", not_taken)
    lean = lapcli.match(block, counts.tolist())
    monkeypatch.setattr(ragged, "from_block", generic)
    monkeypatch.setattr("lapcli.engines.cuda.batch_torch.match_block", lambda *args: None)
    reference = lapcli.match(block, torch.as_tensor(counts))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    for i, ((rows, cols), (rows_ref, cols_ref)) in enumerate(zip(lean, reference)):
        assert rows.is_cuda and rows.dtype == torch.int64 and len(rows) == min(queries, counts[i])
        matrix = host[i, :, starts[i]:starts[i] + counts[i]].astype(np.float64)
        r, c = rows.cpu().numpy(), cols.cpu().numpy()
        assert np.all(np.diff(r) > 0)
        assert matrix[r, c].sum() == pytest.approx(loop_objectives([matrix])[0], rel=1e-9)
        assert np.array_equal(r, rows_ref.cpu().numpy()) and np.array_equal(c, cols_ref.cpu().numpy())


def test_the_lean_matcher_launch_leaves_what_it_cannot_vouch_for_to_the_generic_path(rng):
    """A forbidden pair (+inf), a non-contiguous block, half precision: the generic path answers
    (the lean launch returns None), so the answers are still right."""
    torch = pytest.importorskip("torch")
    from lapcli.engines.cuda.batch_torch import match_block

    counts = [3, 0, 4]
    host = rng.random((3, 6, 7)).astype(np.float32)
    host[0, 1, 0] = np.inf
    block = torch.as_tensor(host, device="cuda")
    assert match_block(block, counts) is None
    assert match_block(block.transpose(1, 2).contiguous().transpose(1, 2), counts) is None
    assert match_block(block.half(), counts) is None
    pairs = lapcli.match(block, counts)
    rows, cols = (x.cpu().numpy() for x in pairs[0])
    assert np.isfinite(host[0, rows, cols]).all()
    assert host[0, rows, cols].sum() == pytest.approx(loop_objectives([np.where(np.isinf(host[0, :, :3]), 1e9, host[0, :, :3])])[0], rel=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_torch_sizes_and_lists_take_the_lean_launch_and_answer_as_the_generic_path(rng, dtype, monkeypatch):
    """batch_linear_assignment on a torch CUDA padded stack with sizes, and on a list of torch CUDA
    matrices (one a strided row view), answers through lapcli.engines.cuda.batch_torch, never the
    pipeline: the scipy loop's objectives, the generic path's columns, −1 past a problem's rows."""
    torch = pytest.importorskip("torch")
    from lapcli import api

    batch, n, m = 9, 30, 45
    rows, cols = rng.integers(0, n + 1, batch), rng.integers(0, m + 1, batch)
    rows[1], cols[2] = n, m
    host = (rng.integers(0, 1000, (batch, n, m)) if dtype == "int32" else rng.random((batch, n, m))).astype(dtype)
    stack = torch.as_tensor(host, device="cuda")
    matrices = [stack[b, :rows[b], :cols[b]] for b in range(batch)]
    generic = {"sizes": lapcli.solve_batch(stack, sizes=(rows, cols)).col_ind.cpu().numpy(),
               "list": [c.cpu().numpy() for c in lapcli.solve_batch(matrices).col_ind]}

    def not_taken(*args, **kwargs):
        raise AssertionError("the lean launch should have answered")

    monkeypatch.setattr(api, "solve_batch", not_taken)
    sized = lapcli.batch_linear_assignment(stack, sizes=(torch.as_tensor(rows), cols.tolist()))
    listed = lapcli.batch_linear_assignment(matrices)
    assert sized.is_cuda and sized.shape == (batch, n) and sized.dtype == torch.int64
    assert np.array_equal(sized.cpu().numpy(), generic["sizes"])
    for b, (matrix, cols_b) in enumerate(zip(matrices, listed)):
        found = cols_b.cpu().numpy()
        assert found.shape == (rows[b],) and np.array_equal(found, generic["list"][b])
        assert np.all(sized.cpu().numpy()[b, rows[b]:] == -1)
        picked = np.flatnonzero(found >= 0)
        assert len(picked) == min(rows[b], cols[b])
        expected = loop_objectives([host[b, :rows[b], :cols[b]].astype(np.float64)])[0]
        assert host[b, picked, found[picked]].astype(np.float64).sum() == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("shape", [(40, 30, 12), (40, 12, 30), (20, 25, 25), (300, 3, 5)])
def test_a_uniform_torch_stack_takes_the_lean_launch_and_answers_as_solve_batch(rng, shape, monkeypatch):
    """batch_linear_assignment on a uniform float32 torch CUDA stack (tall, wide, square) is the
    lean launch with every problem whole: solve_batch's columns (its own stack kernel), −1 on a
    tall problem's unassigned rows."""
    torch = pytest.importorskip("torch")
    from lapcli import api

    stack = torch.as_tensor(rng.random(shape).astype(np.float32), device="cuda")
    expected = lapcli.solve_batch(stack).col_ind.cpu().numpy()
    monkeypatch.setattr(api, "solve_batch", lambda *args, **kwargs: pytest.fail("not the lean launch"))
    found = lapcli.batch_linear_assignment(stack)
    assert found.is_cuda and found.dtype == torch.int64 and tuple(found.shape) == shape[:2]
    assert np.array_equal(found.cpu().numpy(), expected)


def test_what_the_lean_torch_launch_does_not_take_gets_the_generic_answer_or_error(rng):
    """Sizes as CuPy arrays beside a torch block answer as before (the generic path), and a list that
    mixes a tensor with a nested list is refused with lapcli's one-line error, not an AttributeError."""
    torch = pytest.importorskip("torch")
    import cupy

    from lapcli.errors import LapInputError

    counts = np.array([3, 0, 5])
    block = torch.rand((3, 8, int(counts.sum())), device="cuda")
    pairs = lapcli.match(block, cupy.asarray(counts))
    assert [len(rows) for rows, _ in pairs] == [3, 0, 5]
    with pytest.raises(LapInputError, match="one array library"):
        lapcli.batch_linear_assignment([torch.rand((3, 4), device="cuda"), [[1.0, 2.0], [3.0, 4.0]]])
