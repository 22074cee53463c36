"""torch CUDA tensors in and out without a copy (lapcli.arrays): a view of the tensor's memory and a
bare DLPack capsule where torch's current stream is CuPy's, DLPack's stream handshake where it is
not. A wrong view gives wrong costs; a missing handshake reads costs before torch has written them."""

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli
from lapcli.arrays import as_array

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")


def on_host(array):
    return array.cpu().numpy() if hasattr(array, "cpu") else array.get() if hasattr(array, "get") else np.asarray(array)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "bool", "float16"])
def test_a_strided_view_of_a_tensor_is_read_as_it_is(rng, dtype):
    base = torch.from_numpy((rng.random((5, 9, 11)) * 100).astype(dtype)).cuda()
    for tensor in (base, base[1:, 2:, 3:], base[:, ::2, 1:], base.transpose(1, 2), base[2]):
        view, origin = as_array(tensor)
        assert origin.library == "torch" and origin.on_gpu
        assert view.data.ptr == tensor.data_ptr()  # no copy
        assert np.array_equal(view.get(), tensor.cpu().numpy())


def test_answers_go_back_to_torch_without_a_copy(rng):
    import cupy

    _, origin = as_array(torch.zeros(3, device="cuda"))
    array = cupy.arange(7, dtype=cupy.int64)
    tensor = origin.to_caller(array)
    assert tensor.is_cuda and tensor.data_ptr() == array.data.ptr
    assert tensor.tolist() == list(range(7))


def test_solves_on_a_side_stream_wait_for_the_costs_torch_is_writing(rng):
    """The costs are written on a torch side stream after a long sleep: a read that does not wait
    for that stream sees the zeros before them, and its answer is not the costs' optimum."""
    batch, queries = 6, 40
    counts = [int(k) for k in rng.integers(1, 30, batch)]
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    block = rng.random((batch, queries, sum(counts))).astype("float32")
    images = [block[i, :, s:s + k] for i, (s, k) in enumerate(zip(starts, counts))]
    padded = np.full((batch, queries, max(counts)), np.nan, dtype="float32")
    for i, image in enumerate(images):
        padded[i, :, :image.shape[1]] = image
    side = torch.cuda.Stream()
    for form, values in (("match", block), ("list", block), ("sizes", padded)):
        source = torch.from_numpy(values).cuda()
        costs = torch.zeros_like(source)
        torch.cuda.synchronize()
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU cycles before the costs are written
            costs.copy_(source)
            if form == "match":
                found = [(on_host(r), on_host(c)) for r, c in lapcli.match(costs, counts)]
            else:
                if form == "list":  # device matrices read where they lie
                    columns = lapcli.batch_linear_assignment(
                        [costs[i, :, s:s + k] for i, (s, k) in enumerate(zip(starts, counts))])
                else:  # a padded stack read through a view of the tensor
                    columns = lapcli.batch_linear_assignment(costs, sizes=(np.full(batch, queries), np.array(counts)))
                found = [(np.flatnonzero(c >= 0), c[c >= 0]) for c in map(on_host, columns)]
        for matrix, (rows, cols) in zip(images, found):
            expected = matrix[scipy_lsa(matrix)].sum()
            assert matrix[rows, cols].sum() == pytest.approx(expected, rel=1e-6), form


def test_lists_of_tensors_numpy_lacks_or_lazily_negated_are_solved_as_their_values(rng):
    """bfloat16 matrices and lazily negated views (the neg bit) cannot be read in place as they
    lie: they cross through as_array, which widens or resolves them."""
    shapes = [(5, 7), (9, 4), (6, 6)]
    values = [rng.random(shape).astype("float32") for shape in shapes]
    bf16 = [torch.from_numpy(v).cuda().to(torch.bfloat16) for v in values]
    negated = [torch.complex(torch.zeros(v.shape, device="cuda"), torch.from_numpy(v).cuda()).conj().imag
               for v in values]  # −v, with the neg bit set
    assert all(t.is_neg() for t in negated)
    for tensors in (bf16, negated):
        expected_values = [t.float().cpu().numpy() if t.dtype == torch.bfloat16 else t.resolve_neg().cpu().numpy()
                           for t in tensors]
        columns = lapcli.batch_linear_assignment(tensors)
        for matrix, c in zip(expected_values, map(on_host, columns)):
            rows = np.flatnonzero(c >= 0)
            assert matrix[rows, c[rows]].sum() == pytest.approx(matrix[scipy_lsa(matrix)].sum(), abs=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float8_e4m3fn"])
@pytest.mark.parametrize("n", [300, 2048])
def test_one_cuda_tensor_is_solved_as_cupy_on_its_memory(rng, dtype, n):
    """solve and linear_sum_assignment on one CUDA tensor failed in torch's __array__ ("can't convert
    cuda:0 device type tensor to numpy"); it is read as CuPy on its memory (a CPU tensor as NumPy), and
    linear_sum_assignment answers in CuPy, as for CuPy input."""
    tensor = torch.from_numpy(rng.integers(0, 16, (n, n)) / 4.0).cuda().to(getattr(torch, dtype))
    values = on_host(tensor.float()).astype(np.float64)
    rows, cols = scipy_lsa(values)
    solution = lapcli.solve(tensor)
    assert solution.objective == values[rows, cols].sum()
    found_rows, found_cols = lapcli.linear_sum_assignment(tensor)
    assert type(found_cols).__module__.startswith("cupy") and values[on_host(found_rows), on_host(found_cols)].sum() \
        == values[rows, cols].sum()
