"""`lap generate` streams a matrix in row blocks (generator to writer, file or stdout)
without holding it, and the blocks are exactly the matrices the seeds always gave."""

import hashlib
import io
import os
import subprocess
import sys
import tracemalloc

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from lapcli.cli.main import cli
from lapcli.errors import LapInputError
from lapcli.generate import CHUNK_ROWS, generate, generate_blocks, generate_stack, generate_stack_blocks
from lapcli.io.write import write_matrix, write_matrix_blocks

LAP = [sys.executable, "-m", "lapcli"]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def sha256(array) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


# ----------------------------------------------------------------------------- the seeds' contract
# Made by the code before the streaming change (commit 2a1189e). A change of the draws (order,
# shapes, bounds, seeds of a stack's problems) changes these: every matrix anyone generated from a
# seed would change.
PINNED = [  # (call, shape, dtype, sha256 of the bytes, first, middle and last value)
    (lambda: generate(3000, 50, range_factor=10, seed=7), (3000, 50), "int32",
     "3e9f49648a05a48c82f5a63aa2e6bf905bbf923397767ce4a37a21efbe98c12f", (28347, 25642, 17222)),
    # an odd width: a chunk draws an odd number of 32-bit halves of the generator's 64-bit words
    (lambda: generate(2100, 51, range_factor=10, seed=13), (2100, 51), "int32",
     "5b2e279a72f377b87040be88fc491e66684d66b1b50f333c558b7f337aad4cc3", (18815, 6213, 7004)),
    (lambda: generate(2100, 70, range_factor=1000, seed=11, dtype="int64"), (2100, 70), "int64",
     "b72c84afc7d2fcf6a7458f1fd37107fcb467d23b82c05335cfeb11043d5d61be", (280982, 1160543, 1259841)),
    (lambda: generate(1500, seed=3, kind="float"), (1500, 1500), "float64",
     "3e350e8c81a04d6666f6e2dac3e59f1032a3da49892fffaf62ec8242d0214b40",
     (0.08564916714362436, 0.025481870964601527, 0.07766568976972121)),
    (lambda: generate(1100, 40, seed=3, kind="float", dtype="float32"), (1100, 40), "float32",
     "ffbc8564a4911be661f3158f0a690195e46859e2e2847cbf8b32a048644bacb1", (0.08564917, 0.5771239, 0.05869012)),
    (lambda: generate(1200, seed=2, kind="sanity"), (1200, 1200), "float64",
     "ef80c31a5d18e077568e4c062bb65ceca68fff01702738031ad46e74972b7696",
     (1.0869333816617535, 1.1122651232771834, 1.5526282693850555)),
    (lambda: generate_stack(3, 1100, 30, range_factor=5, seed=4), (3, 1100, 30), "int32",
     "678fb800884072e139c8d12dd7c8abc3071cc5206665afc01d682bb6e1e85154", (1369, 2932, 5390)),
]


@pytest.mark.parametrize("index", range(len(PINNED)))
def test_a_seed_gives_the_matrix_it_always_gave(index):
    make, shape, dtype, digest, values = PINNED[index]
    matrix = make()
    assert matrix.shape == shape and matrix.dtype == dtype
    assert (matrix.flat[0], matrix.flat[matrix.size // 2], matrix.flat[-1]) == values
    assert sha256(matrix) == digest


def test_a_seed_gives_the_geometric_matrix_it_always_gave():
    # einsum's last bit may differ between platforms: the values, to 1e-12, not the bytes
    matrix = generate(1300, 200, seed=5, kind="geometric")
    stack = generate_stack(2, 40, seed=9, kind="geometric", dtype="float32")
    assert matrix.dtype == np.float64 and stack.dtype == np.float32
    pinned = [0.5381628676016557, 0.17757509403447022, 0.4077346938875008, 0.16187832552922876,
              0.7743972895827999, 1.1412039498037996, 0.8558553607316715, 89451.69112236422]
    found = [matrix[0, 0], matrix[650, 0], matrix[1299, 0], matrix[-1, -1], *matrix[1024:1027, 7], matrix.sum()]
    np.testing.assert_allclose(found, pinned, rtol=1e-12)
    np.testing.assert_allclose([stack[0, 0, 0], stack[1, 0, 0], stack[-1, -1, -1]],
                               [0.26336777, stack[1, 0, 0], 0.48310506], rtol=1e-7)


def test_geometric_costs_are_dx_squared_plus_dy_squared_bit_for_bit():
    """Each squared distance is dx·dx + dy·dy, every operation rounded on its own (no fused
    multiply-add), so a matrix is the same on every platform; the integer kind scales and rounds it."""
    n, m, seed = 1100, 37, 3
    rng = np.random.default_rng(seed)
    rows, cols = rng.random((n, 2)), rng.random((m, 2))
    dx, dy = rows[:, None, 0] - cols[None, :, 0], rows[:, None, 1] - cols[None, :, 1]
    expected = np.add(np.multiply(dx, dx), np.multiply(dy, dy))
    assert np.array_equal(generate(n, m, seed=seed, kind="geometric"), expected)
    integers = generate(n, m, seed=seed, kind="geometric-int")
    assert np.array_equal(integers, np.rint(expected * 500_000).astype(np.int32))


# ----------------------------------------------------------------------------- the block generators
@pytest.mark.parametrize("kind, dtype", [("uniform", None), ("uniform", "float32"), ("float", None),
                                         ("geometric", "float32"), ("sanity", None)])
def test_blocks_are_the_chunks_of_generate_in_the_final_dtype(kind, dtype):
    n = 2 * CHUNK_ROWS + 52
    done = []
    blocks = list(generate_blocks(n, range_factor=10, seed=8, kind=kind, dtype=dtype, progress=done.append))
    matrix = generate(n, range_factor=10, seed=8, kind=kind, dtype=dtype)
    assert [len(block) for block in blocks] == [CHUNK_ROWS, CHUNK_ROWS, 52] and done == [1024, 2048, n]
    assert all(block.dtype == matrix.dtype and block.flags.c_contiguous for block in blocks)
    assert np.array_equal(np.concatenate(blocks), matrix)


def test_stack_blocks_are_the_rows_of_each_problem_in_turn():
    done = []
    blocks = list(generate_stack_blocks(3, CHUNK_ROWS + 5, 9, range_factor=2, seed=4, progress=done.append))
    stack = generate_stack(3, CHUNK_ROWS + 5, 9, range_factor=2, seed=4)
    assert [len(block) for block in blocks] == [CHUNK_ROWS, 5] * 3 and done == [1, 2, 3]
    assert np.array_equal(np.concatenate(blocks).reshape(stack.shape), stack)


@pytest.mark.parametrize("call", [lambda: generate_blocks(0), lambda: generate_blocks(5, 6, kind="sanity"),
                                  lambda: generate_stack_blocks(0, 5),
                                  lambda: generate_blocks(5, kind="float", dtype="int32")])
def test_block_generators_check_their_options_before_the_first_block(call):
    with pytest.raises(LapInputError):
        call()  # not next(call()): the CLI refuses before it opens its output


# ----------------------------------------------------------------------------- the streaming writer
def row_blocks(array, rows=3):
    """The (rows, m) blocks of ``array``'s (-1, m) view: for a stack, some cross from one problem
    into the next."""
    flat = array.reshape(-1, array.shape[-1])
    return [flat[start:start + rows] for start in range(0, len(flat), rows)]


ARRAYS = [np.arange(35, dtype=np.int32).reshape(5, 7) * 1000, np.arange(60, dtype=np.int64).reshape(3, 4, 5) - 7,
          np.full((1, 1), 0.25, dtype=np.float32), np.random.default_rng(1).random((10, 3))]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype}-{a.ndim}d")
def test_npy_file_and_stdout_are_the_bytes_np_save_writes(tmp_path, array):
    expected = io.BytesIO()
    np.save(expected, array)
    write_matrix_blocks(str(tmp_path / "a.npy"), array.shape, array.dtype, row_blocks(array))
    stdout = io.BytesIO()
    write_matrix_blocks("-", array.shape, array.dtype, row_blocks(array), stdout=stdout)
    assert (tmp_path / "a.npy").read_bytes() == expected.getvalue() == stdout.getvalue()


@pytest.mark.parametrize("array", [ARRAYS[0], ARRAYS[3]], ids=["int", "float"])
def test_csv_is_what_savetxt_writes_for_the_whole_matrix(tmp_path, array):
    expected = io.BytesIO()
    np.savetxt(expected, array, delimiter=",", fmt="%d" if array.dtype.kind == "i" else "%.17g")
    write_matrix_blocks(str(tmp_path / "a.csv"), array.shape, array.dtype, row_blocks(array))
    assert (tmp_path / "a.csv").read_bytes() == expected.getvalue()


@pytest.mark.parametrize("array", [ARRAYS[0], ARRAYS[1]], ids=["matrix", "stack"])
def test_hdf5_is_one_contiguous_dataset(tmp_path, array):
    write_matrix_blocks(str(tmp_path / "a.h5"), array.shape, array.dtype, row_blocks(array), dataset="grp/c")
    with h5py.File(tmp_path / "a.h5", "r") as h5:
        ds = h5["grp/c"]
        assert ds.chunks is None and ds.compression is None and ds.dtype == array.dtype
        assert np.array_equal(ds[()], array)


@pytest.mark.parametrize("name", ["a.npy", "a.csv", "a.h5"])
def test_write_matrix_writes_a_whole_array_as_before(tmp_path, name):
    array = ARRAYS[0]
    write_matrix(str(tmp_path / name), array)
    if name.endswith(".h5"):
        with h5py.File(tmp_path / name, "r") as h5:
            assert np.array_equal(h5["costs"][()], array)
    else:
        loaded = np.load(tmp_path / name) if name.endswith(".npy") else np.loadtxt(tmp_path / name, delimiter=",")
        assert np.array_equal(loaded, array)


def test_write_matrix_dash_is_npy_on_stdout(tmp_path, capsysbinary, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_matrix("-", ARRAYS[1])
    assert np.array_equal(np.load(io.BytesIO(capsysbinary.readouterr().out)), ARRAYS[1])
    assert os.listdir(tmp_path) == []


def failing_blocks(array):
    yield array[:2]
    raise RuntimeError("the generator failed")


def too_many_blocks(array):
    yield array
    yield array[:1]


@pytest.mark.parametrize("name", ["a.npy", "a.csv", "a.h5"])
@pytest.mark.parametrize("blocks, error, fragment", [
    (failing_blocks, RuntimeError, "the generator failed"),
    (lambda array: [array[:3]], ValueError, "hold 3 of the 5 rows"),  # never a short file
    (too_many_blocks, ValueError, "more than the 5 rows"),
    (lambda array: [array.astype(np.int64)], ValueError, "int64 in an array of (5, 7) int32"),
    (lambda array: [array[:, :3]], ValueError, "a block of (5, 3)"),
])
def test_a_failed_or_wrong_block_stream_leaves_no_file_and_no_part_file(tmp_path, name, blocks, error, fragment):
    array = ARRAYS[0]
    with pytest.raises(error, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        write_matrix_blocks(str(tmp_path / name), array.shape, array.dtype, blocks(array))
    assert os.listdir(tmp_path) == []


def test_a_stack_is_not_written_to_csv(tmp_path):
    with pytest.raises(LapInputError, match="written to .npy or .h5"):
        write_matrix(str(tmp_path / "a.csv"), ARRAYS[1])
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- lap generate
MATRIX_BYTES = 20000 * 600 * 4  # 48 MB of int32; one chunk of it: 1024 rows, drawn as int64 (4.9 MB)


def traced_peak(call):
    """Peak bytes that Python and numpy (tracemalloc sees numpy's data buffers) held during ``call``."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", ["m.npy", "m.h5"])
def test_generate_holds_one_chunk_not_the_matrix(tmp_path, name):
    path = tmp_path / name
    result, peak = traced_peak(lambda: invoke("generate", "--n", 20000, "--m", 600, "--seed", 3, "-o", path))
    assert result.exit_code == 0, result.output
    assert result.stderr == f"wrote {path} (20000×600 int32)\n"
    assert peak < MATRIX_BYTES / 3, f"peak {peak / 2**20:.1f} MiB for a {MATRIX_BYTES / 2**20:.1f} MiB matrix"
    with h5py.File(path, "r") if name.endswith(".h5") else open(path, "rb") as handle:
        written = handle["costs"][()] if name.endswith(".h5") else np.load(handle)
        assert np.array_equal(written, generate(20000, 600, seed=3))


def test_generate_batch_holds_one_chunk_not_the_stack(tmp_path):
    path = tmp_path / "s.npy"
    result, peak = traced_peak(lambda: invoke("generate", "--batch", 4, "--n", 5000, "--m", 600, "--seed", 3,
                                              "-o", path))
    assert result.exit_code == 0, result.output
    assert peak < MATRIX_BYTES / 3, f"peak {peak / 2**20:.1f} MiB for a {MATRIX_BYTES / 2**20:.1f} MiB stack"
    assert np.array_equal(np.load(path), generate_stack(4, 5000, 600, seed=3))


TRACED_MAIN = """
import sys, tracemalloc
from lapcli.cli.main import main

tracemalloc.start()
try:
    main(sys.argv[1:])
except SystemExit as exit:
    sys.stderr.write(f"peak {tracemalloc.get_traced_memory()[1]}\\n")
    raise
"""


def test_generate_to_stdout_holds_one_chunk_not_the_matrix_nor_its_npy_bytes(tmp_path):
    with open(tmp_path / "out.npy", "wb") as stdout:
        process = subprocess.run([sys.executable, "-c", TRACED_MAIN, "generate", "--n", "20000", "--m", "600",
                                  "--seed", "3"], stdout=stdout, stderr=subprocess.PIPE, timeout=120)
    assert process.returncode == 0, process.stderr
    peak = int(process.stderr.decode().split("peak")[-1])
    assert peak < MATRIX_BYTES / 3, f"peak {peak / 2**20:.1f} MiB for a {MATRIX_BYTES / 2**20:.1f} MiB matrix"
    assert np.array_equal(np.load(tmp_path / "out.npy"), generate(20000, 600, seed=3))


@pytest.mark.parametrize("args, updates", [  # the bar shows from n·batch = 4096 on, on a terminal
    (["--n", 4 * CHUNK_ROWS + 100], [1024, 2048, 3072, 4096, 4196]),  # rows
    (["--batch", 3, "--n", 1500], [1, 2, 3]),  # problems
])
def test_the_progress_bar_moves_per_block(tmp_path, monkeypatch, args, updates):
    from rich.console import Console
    from rich.progress import Progress

    import lapcli.cli.main

    seen = []
    real_update = Progress.update
    monkeypatch.setattr(lapcli.cli.main, "stderr_console", lambda quiet: Console(stderr=True, force_terminal=True))
    monkeypatch.setattr(Progress, "update", lambda self, task, **kw: seen.append(kw["completed"])
                        or real_update(self, task, **kw))
    result = invoke("generate", *args, "--m", 20, "--seed", 1, "-o", tmp_path / "m.npy")
    assert result.exit_code == 0, result.output
    assert seen == updates


def test_a_reader_that_goes_away_is_exit_1_without_a_word(tmp_path):
    with open(tmp_path / "err", "wb") as stderr:
        process = subprocess.Popen(LAP + ["generate", "--n", "5000", "--seed", "1"], stdout=subprocess.PIPE, stderr=stderr)
        assert process.stdout.read(6) == b"\x93NUMPY"
        process.stdout.close()  # as `| head -c 6` does
        assert process.wait(timeout=60) == 1
    assert (tmp_path / "err").read_bytes() == b""


def test_integer_distances_are_the_float_ones_scaled_to_a_million():
    """geometric-int: the same points as geometric, squared distances × 5·10⁵ rounded, in [0, 10⁶]."""
    from lapcli.generate import GEOMETRIC_INT_SCALE

    floats = generate(300, 200, kind="geometric", seed=5)
    integers = generate(300, 200, kind="geometric-int", seed=5)
    assert integers.dtype == np.int32 and integers.min() >= 0 and integers.max() <= 10**6
    assert np.array_equal(integers, np.rint(floats * GEOMETRIC_INT_SCALE).astype(np.int32))


def test_float32_uniform_draws_stay_below_one():
    """float64 draws above 1 − 2^-25 round to 1.0 in float32: an 8192-wide float32 matrix of seed 0
    held two 1.0s, outside the documented [0, 1). They are float32's largest value below 1; every
    other value is the float64 draw's cast, as before."""
    from lapcli.generate import below_one, generate

    matrix = generate(1809, m=8192, kind="float", dtype="float32", seed=0)
    wide = generate(1809, m=8192, kind="float", dtype="float64", seed=0)
    assert matrix.max() < 1 and int((wide.astype(np.float32) == 1).sum()) >= 1
    changed = matrix != wide.astype(np.float32)
    assert (matrix[changed] == np.nextafter(np.float32(1), np.float32(0))).all()
    points = below_one(np.array([[0.99999999], [0.5]]).astype(np.float32))  # the points' draw, cast alike
    assert points.max() < 1 and points[1, 0] == np.float32(0.5)
