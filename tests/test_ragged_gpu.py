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


def test_padded_stack_with_sizes_on_the_gpu_ignores_the_padding(rng):
    import cupy

    stack = rng.random((50, 30, 40))
    rows, cols = rng.integers(0, 31, 50), rng.integers(0, 41, 50)
    garbage = stack.copy()
    for b in range(50):
        garbage[b, rows[b]:, :] = np.nan
        garbage[b, :, cols[b]:] = -np.inf
    solution = lapcli.solve_batch(cupy.asarray(garbage), sizes=(rows, cols))
    assert solution.col_ind.shape == (50, 30) and solution.report.certified
    matrices = [stack[b, :rows[b], :cols[b]] for b in range(50)]
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
