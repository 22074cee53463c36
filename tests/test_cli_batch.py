"""Stacks on the command line: `lap solve` on stacks and on several inputs, `lap generate --batch`."""

import io
import json
import os

import h5py
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

from tests.test_cli import assert_one_line_error, invoke


def scipy_loop(stack, maximize=False):
    """(col_ind (B, n) with −1 unassigned, objectives (B,)) one problem at a time."""
    cols = np.full(stack.shape[:2], -1, dtype=np.int64)
    objectives = []
    for b, cost in enumerate(stack):
        rows, columns = scipy_lsa(cost, maximize=maximize)
        cols[b, rows] = columns
        objectives.append(cost[rows, columns].sum())
    return cols, np.array(objectives)


def objectives_of(stack, col_ind):
    """The objective of each problem under the assignment ``col_ind``, after checking that it is
    an assignment: min(n, m) distinct columns per problem."""
    out = []
    for cost, cols in zip(stack, col_ind):
        rows = np.flatnonzero(cols >= 0)
        assert rows.size == min(cost.shape) and np.unique(cols[rows]).size == rows.size
        out.append(cost[rows, cols[rows]].sum())
    return np.array(out)


def write_stack(tmp_path, stack, kind):
    if kind == "npy":
        np.save(tmp_path / "s.npy", stack)
        return tmp_path / "s.npy"
    with h5py.File(tmp_path / "s.h5", "w") as f:
        f.create_dataset("group/stack", data=stack)
    return tmp_path / "s.h5"  # found on its own: the file's only 2-D/3-D dataset


# ----------------------------------------------------------------------------- solve: stacks
@pytest.mark.parametrize("kind", ["npy", "h5"])
@pytest.mark.parametrize("shape", [(6, 5, 7), (5, 7, 4)])
def test_a_stack_is_solved_like_a_scipy_loop_in_every_output_format(tmp_path, rng, kind, shape):
    stack = rng.integers(0, 60, shape)
    path = write_stack(tmp_path, stack, kind)
    expected_cols, expected = scipy_loop(stack)

    result = invoke("solve", path, "--json", "--quiet", "-o", tmp_path / "c.npy")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["batch"] == shape[0] and (report["n_rows"], report["n_cols"]) == shape[1:]
    assert report["objectives"] == expected.tolist()  # exact integers, in problem order
    from lapcli.engines import cuda_status

    assert report["solver"] == ("cuda-batch" if cuda_status()[0] else "scipy-batch") and report["input"] == str(path)
    cols = np.load(tmp_path / "c.npy")
    assert cols.dtype == np.int64 and cols.shape == shape[:2]
    assert ((cols == -1).sum(axis=1) == max(0, shape[1] - shape[2])).all()  # −1 marks the unassigned rows
    assert objectives_of(stack, cols).tolist() == expected.tolist()

    assert invoke("solve", path, "--quiet", "-o", tmp_path / "c.csv").exit_code == 0
    lines = (tmp_path / "c.csv").read_text().splitlines()
    assert lines[0] == "problem,row,col"
    triples = np.array([[int(x) for x in line.split(",")] for line in lines[1:]])
    assert len(triples) == shape[0] * min(shape[1:])  # assigned pairs only
    from_csv = np.full(shape[:2], -1)
    from_csv[triples[:, 0], triples[:, 1]] = triples[:, 2]
    assert objectives_of(stack, from_csv).tolist() == expected.tolist()

    assert invoke("solve", path, "--quiet", "-o", tmp_path / "c.json").exit_code == 0
    from_json = np.array(json.loads((tmp_path / "c.json").read_text())["col_ind"])
    assert from_json.shape == shape[:2] and objectives_of(stack, from_json).tolist() == expected.tolist()
    assert np.array_equal(from_json, cols) and np.array_equal(from_csv, cols)
    del expected_cols  # ties may give another optimal assignment: only the objectives must agree


def test_stack_report_file_maximize_and_the_summary_on_stderr(tmp_path, rng):
    stack = rng.random((8, 6, 6)).astype(np.float32)
    np.save(tmp_path / "s.npy", stack)
    result = invoke("solve", tmp_path / "s.npy", "--maximize", "--solver", "scipy-batch", "--report", tmp_path / "r.json")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""  # people's text goes to stderr
    report = json.loads((tmp_path / "r.json").read_text())
    _, expected = scipy_loop(stack.astype(np.float64), maximize=True)
    np.testing.assert_allclose(report["objectives"], expected, rtol=1e-6)
    assert report["maximize"] is True and report["batch"] == 8 and report["certified"] is False
    summary = result.stderr
    for fragment in ("batch 8", "size 6×6", "solver scipy-batch", "device cpu", "ms", "problems/s", "certified no"):
        assert fragment in summary, summary
    assert len(summary.splitlines()) <= 3  # no per-problem table
    quiet = invoke("solve", tmp_path / "s.npy", "--quiet")
    assert quiet.exit_code == 0 and quiet.stderr == ""


def test_a_stack_on_stdin_and_csv_assignment_on_stdout(rng):
    stack = rng.integers(0, 9, (3, 4, 4))
    buffer = io.BytesIO()
    np.save(buffer, stack)
    result = invoke("solve", "-", "-o", "-", "--quiet", input=buffer.getvalue())
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "problem,row,col" and len(lines) == 1 + 3 * 4
    refused = invoke("solve", "-", "--duals", "d.npz", input=buffer.getvalue())  # rank known only once read
    assert_one_line_error(refused, 2, "--duals is not supported for stacks")


@pytest.mark.parametrize("args, fragment", [
    (["--duals", "d.npz"], "--duals is not supported for stacks"),
    (["--cost-limit", "5"], "--cost-limit is not supported for stacks"),
    (["--solver", "numpy"], "solver 'numpy' solves one problem at a time"),
])
def test_what_a_stack_cannot_take_is_one_line_exit_2_and_writes_nothing(tmp_path, monkeypatch, rng, args, fragment):
    np.save(tmp_path / "s.npy", rng.integers(0, 9, (3, 4, 4)))
    monkeypatch.chdir(tmp_path)
    result = invoke("solve", "s.npy", *args, "-o", "c.csv", "--report", "r.json")
    assert_one_line_error(result, 2, fragment)
    assert sorted(os.listdir(tmp_path)) == ["s.npy"]


def test_a_batch_engine_on_one_matrix_is_refused(tmp_path, rng):
    np.save(tmp_path / "m.npy", rng.integers(0, 9, (4, 4)))
    assert_one_line_error(invoke("solve", tmp_path / "m.npy", "--solver", "scipy-batch"), 2, "solves stacks")


def test_hdf5_with_a_matrix_and_a_stack_asks_which(tmp_path):
    with h5py.File(tmp_path / "two.h5", "w") as f:
        f.create_dataset("m", data=np.eye(3))
        f.create_dataset("s", data=np.zeros((2, 3, 3)))
    assert_one_line_error(invoke("solve", tmp_path / "two.h5"), 2, "several 2-D/3-D datasets (/m, /s)")
    result = invoke("solve", f"{tmp_path / 'two.h5'}:/s", "--json", "--quiet")
    assert result.exit_code == 0 and json.loads(result.stdout)["batch"] == 2


# ----------------------------------------------------------------------------- solve: several inputs
def test_several_inputs_give_one_json_line_each_in_order(tmp_path, rng):
    first = rng.integers(0, 40, (4, 5, 5))
    second = rng.integers(0, 40, (6, 3))
    third = rng.random((3, 4, 6))
    np.save(tmp_path / "a.npy", first)
    np.savetxt(tmp_path / "b.csv", second, delimiter=",", fmt="%d")
    with h5py.File(tmp_path / "c.h5", "w") as f:
        f.create_dataset("x", data=third)
        f.create_dataset("other", data=np.eye(2))
    specs = [str(tmp_path / "a.npy"), str(tmp_path / "b.csv"), f"{tmp_path / 'c.h5'}:/x"]
    result = invoke("solve", *specs, "--json")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith('{"input": ') for line in lines)  # compact: one line each
    reports = [json.loads(line) for line in lines]
    assert [r["input"] for r in reports] == specs
    assert reports[0]["objectives"] == scipy_loop(first)[1].tolist()
    assert reports[1]["objective"] == scipy_loop(second[None])[1][0] and "batch" not in reports[1]
    np.testing.assert_allclose(reports[2]["objectives"], scipy_loop(third)[1], rtol=1e-12)
    for spec in specs:  # each summary is headed by its input
        assert spec in result.stderr


def test_a_typo_in_the_third_input_fails_before_any_solving(tmp_path, rng):
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (2, 3, 3)))
    np.save(tmp_path / "b.npy", rng.integers(0, 9, (3, 3)))
    result = invoke("solve", tmp_path / "a.npy", tmp_path / "b.npy", tmp_path / "c.nyp", "--json")
    assert_one_line_error(result, 2, "no such file")
    assert result.stdout == ""  # nothing was solved
    # a stack-only refusal is found before the matrix ahead of it is solved
    late = invoke("solve", tmp_path / "b.npy", tmp_path / "a.npy", "--cost-limit", "3", "--json")
    assert_one_line_error(late, 2, "--cost-limit is not supported for stacks")
    assert late.stdout == ""


def test_a_text_header_to_settle_fails_before_any_solving(tmp_path, rng):
    """A text input whose first line needs --header, --no-header or --index-col is refused with the
    other inputs' checks, before the first input is solved; the option settles it, and a binary
    input beside it reads without it (alone, or beside binary inputs only, it refuses it; stdin
    beside binary files takes it where stdin is text)."""
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (3, 3)))
    labels = "0,1,2\n" + "".join(f"{i},{i + 2},{i * 3 % 5}\n" for i in range(3))  # pandas' labels, or data
    (tmp_path / "p.csv").write_text(labels)
    (tmp_path / "i.csv").write_text(",0,1\n0,5,3\n1,4,2\n")  # pandas' index column
    for csv_file, message in (("p.csv", "could be pandas' default column labels"), ("i.csv", "--index-col")):
        result = invoke("solve", tmp_path / "a.npy", tmp_path / csv_file, "--json")
        assert_one_line_error(result, 2, message)
        assert result.stdout == ""  # a.npy was not solved
    for csv_file, option in (("p.csv", "--no-header"), ("i.csv", "--index-col")):
        result = invoke("solve", tmp_path / "a.npy", tmp_path / csv_file, option, "--json")
        assert result.exit_code == 0, result.output
        assert [json.loads(line)["n_rows"] for line in result.stdout.splitlines()] == [3, 4 if option == "--no-header" else 2]
    for alone in ([tmp_path / "a.npy"], [tmp_path / "a.npy", tmp_path / "a.npy"]):
        assert_one_line_error(invoke("solve", *alone, "--no-header"), 2, "apply to text input only")
    # stdin beside binary files: the options are for stdin read as text, and refused where it is NPY
    buffer = io.BytesIO()
    np.save(buffer, rng.integers(0, 9, (3, 3)))
    as_npy = invoke("solve", tmp_path / "a.npy", "-", "--no-header", "--json", "--quiet", input=buffer.getvalue())
    assert_one_line_error(as_npy, 2, "stdin is NPY: --header, --no-header and --index-col apply to text input only")
    as_text = invoke("solve", tmp_path / "a.npy", "-", "--no-header", "--json", input=labels)
    assert as_text.exit_code == 0, as_text.output
    assert [json.loads(line)["n_rows"] for line in as_text.stdout.splitlines()] == [3, 4]
    beside_text = invoke("solve", tmp_path / "p.csv", "-", "--no-header", "--json", input=buffer.getvalue())
    assert [json.loads(line)["n_rows"] for line in beside_text.stdout.splitlines()] == [4, 3]


@pytest.mark.parametrize("option", [["-o", "c.csv"], ["--report", "r.json"], ["--duals", "d.npz"]])
def test_one_file_outputs_with_several_inputs_are_refused(tmp_path, monkeypatch, rng, option):
    np.save(tmp_path / "a.npy", rng.integers(0, 9, (3, 3)))
    monkeypatch.chdir(tmp_path)
    result = invoke("solve", "a.npy", "a.npy", *option)
    assert_one_line_error(result, 2, f"{option[0]} with 2 inputs: run one input per output file")
    assert sorted(os.listdir(tmp_path)) == ["a.npy"]


# ----------------------------------------------------------------------------- generate --batch
def test_generate_batch_is_reproducible_and_problem_b_does_not_depend_on_the_batch_size(tmp_path):
    for name, batch in (("a.npy", 5), ("b.npy", 5), ("c.npy", 2)):
        result = invoke("generate", "--batch", batch, "--n", 6, "--m", 9, "--range", 10, "--seed", 3, "-o", tmp_path / name)
        assert result.exit_code == 0, result.output
    a, b, c = (np.load(tmp_path / name) for name in ("a.npy", "b.npy", "c.npy"))
    assert a.shape == (5, 6, 9) and a.dtype == np.int32 and np.array_equal(a, b)
    assert np.array_equal(c, a[:2])  # problem b is seeded from (seed, b), not from one stream
    assert a.min() >= 0 and a.max() < 60 and len({p.tobytes() for p in a}) == 5  # the problems differ
    invoke("generate", "--batch", 5, "--n", 6, "--m", 9, "--range", 10, "--seed", 4, "-o", tmp_path / "d.npy")
    assert not np.array_equal(np.load(tmp_path / "d.npy"), a)


def test_generate_batch_writes_hdf5_and_npy_on_stdout_with_the_kinds_dtypes(tmp_path):
    result = invoke("generate", "--batch", 3, "--n", 5, "--kind", "float", "--dtype", "float32", "--seed", 1,
                    "-o", tmp_path / "s.h5", "--dataset", "stack")
    assert result.exit_code == 0, result.output
    with h5py.File(tmp_path / "s.h5") as f:
        stack = f["stack"][()]
    assert stack.shape == (3, 5, 5) and stack.dtype == np.float32 and 0 <= stack.min() and stack.max() <= 1
    piped = invoke("generate", "--batch", 3, "--n", 5, "--kind", "float", "--dtype", "float32", "--seed", 1, "-o", "-")
    assert np.array_equal(np.load(io.BytesIO(piped.stdout_bytes)), stack)
    # and the stack solves as a stack
    solved = invoke("solve", tmp_path / "s.h5", "--json", "--quiet")
    assert json.loads(solved.stdout)["batch"] == 3


@pytest.mark.parametrize("args, fragment", [
    (["-o", "s.csv"], "CSV holds one matrix"),
    (["-o", "s.npy", "--kind", "float", "--dtype", "int32"], "would truncate"),
    (["-o", "s.npy", "--kind", "sanity", "--m", "4"], "square"),
])
def test_generate_batch_refusals_are_exit_2_and_write_nothing(tmp_path, monkeypatch, args, fragment):
    monkeypatch.chdir(tmp_path)
    assert_one_line_error(invoke("generate", "--batch", 2, "--n", 3, "--seed", 1, *args), 2, fragment)
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------------------------------- ragged batches
def loop_answers(matrices, maximize=False):
    return [cost[scipy_lsa(cost, maximize=maximize)].sum() for cost in matrices]


def test_a_ragged_npz_and_an_hdf5_group_are_solved_as_one_batch(tmp_path, rng):
    """lap generate --ragged writes reproducible problems of drawn shapes (.npz, or an HDF5 group);
    lap solve reads either as one batch and writes one assignment per problem (.npz, .csv, .json),
    objectives in order; .npy cannot hold them (exit 2, no file)."""
    for name in ("a.npz", "b.npz"):
        assert invoke("generate", "--batch", 9, "--n", 6, "--m", 9, "--ragged", "--seed", 4, "-o", tmp_path / name,
                      "-q").exit_code == 0
    first, second = np.load(tmp_path / "a.npz"), np.load(tmp_path / "b.npz")
    matrices = [first[str(b)] for b in range(9)]
    assert all(np.array_equal(first[k], second[k]) for k in first.files)  # the seed decides everything
    assert len({m.shape for m in matrices}) > 1 and all(m.shape[0] <= 6 and m.shape[1] <= 9 for m in matrices)
    result = invoke("solve", tmp_path / "a.npz", "-o", tmp_path / "cols.npz", "--report", tmp_path / "r.json", "-q")
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["batch"] == 9 and report["objectives"] == loop_answers(matrices)
    cols = np.load(tmp_path / "cols.npz")
    for b, cost in enumerate(matrices):
        col = cols[str(b)]
        rows = np.flatnonzero(col >= 0)
        assert col.shape == (cost.shape[0],) and cost[rows, col[rows]].sum() == report["objectives"][b]
    text = invoke("solve", tmp_path / "a.npz", "-o", "-", "-q").output.splitlines()
    assert text[0] == "problem,row,col" and len(text) - 1 == sum(min(m.shape) for m in matrices)
    refused = invoke("solve", tmp_path / "a.npz", "-o", tmp_path / "cols.npy")
    assert_one_line_error(refused, 2, "several shapes does not fit one NPY array")
    assert not (tmp_path / "cols.npy").exists()
    assert invoke("generate", "--batch", 5, "--n", 7, "--ragged", "--seed", 2, "-o", tmp_path / "g.h5",
                  "--dataset", "group", "-q").exit_code == 0
    with h5py.File(tmp_path / "g.h5") as handle:
        grouped = [handle["group"][str(b)][()] for b in range(5)]
    result = invoke("solve", tmp_path / "g.h5", "--dataset", "group", "--json", "-q")
    assert json.loads(result.output)["objectives"] == loop_answers(grouped)
    # the file as generate writes it, without --dataset: its one group is the batch
    assert invoke("generate", "--batch", 5, "--n", 7, "--ragged", "--seed", 2, "-o", tmp_path / "d.h5", "-q").exit_code == 0
    result = invoke("solve", tmp_path / "d.h5", "--json", "-q")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["objectives"] == loop_answers(grouped)
    # a subgroup or a link to nothing among the members was skipped without a word (a batch of fewer)
    for name, extra in (("sub", lambda h5: h5.create_dataset("group/sub/c", data=np.eye(3))),
                        ("lost", lambda h5: h5.__setitem__("group/lost", h5py.SoftLink("/nowhere")))):
        with h5py.File(tmp_path / f"{name}.h5", "w") as h5:
            for b, member in enumerate(grouped):
                h5[f"group/{b}"] = member
            extra(h5)
        refused = invoke("solve", tmp_path / f"{name}.h5", "--dataset", "group", "--json", "-q")
        assert_one_line_error(refused, 2, f"group (it holds {name}, which are no datasets); a batch of problems is a group")
    # a member of another rank or type is named with what it is, as is an empty group or NPZ
    with h5py.File(tmp_path / "odd.h5", "w") as h5:
        h5["group/a"], h5["group/b"], h5["group/c"] = np.eye(2), np.ones((2, 2, 2)), np.array([["x"]], dtype="S1")
        h5.create_group("empty")
    for dataset, words in (("group", "group (b is 3-D, c holds |S1)"), ("empty", "group of no dataset")):
        refused = invoke("solve", tmp_path / "odd.h5", "--dataset", dataset, "-q")
        assert_one_line_error(refused, 2, f"{dataset} is a {words}; a batch of problems is a group of 2-D numeric")
    np.savez(tmp_path / "none.npz")
    assert_one_line_error(invoke("solve", tmp_path / "none.npz", "-q"), 2, "none.npz holds no arrays")
    assert_one_line_error(invoke("solve", f"{tmp_path / 'none.npz'}:x", "-q"), 2, "has no array 'x'; it holds none")


@pytest.mark.parametrize("name", ["one.npz", "one.h5"])
def test_a_generated_batch_of_one_is_read_as_a_batch(tmp_path, name):
    """A batch of one (array or dataset "0", as lapcli names a batch's members) answers as a batch,
    as it does with two members; one array np.savez names arr_0 stays a matrix."""
    assert invoke("generate", "--batch", 1, "--n", 4, "--ragged", "--seed", 3, "-o", tmp_path / name, "-q").exit_code == 0
    result = invoke("solve", tmp_path / name, "-o", "-", "--report", tmp_path / "r.json", "-q")
    assert result.exit_code == 0 and result.output.startswith("problem,row,col\n")
    assert json.loads((tmp_path / "r.json").read_text())["batch"] == 1
    np.savez(tmp_path / "matrix.npz", np.array([[0, 5], [5, 0]]))
    assert invoke("solve", tmp_path / "matrix.npz", "-o", "-", "-q").output == "row,col\n0,0\n1,1\n"


def test_a_lone_dataset_named_0_that_lapcli_did_not_mark_stays_what_it_is(tmp_path):
    """A matrix or a stack written under a group at ".../0" (--dataset run/0) is not a batch of one:
    only a group lapcli marks as a batch is (a review found both refused as "a group")."""
    assert invoke("generate", "--n", 3, "--seed", 1, "-o", tmp_path / "m.h5", "--dataset", "run/0", "-q").exit_code == 0
    assert invoke("solve", tmp_path / "m.h5", "--solver", "numpy", "-o", "-", "-q").output.startswith("row,col\n")
    assert invoke("generate", "--n", 3, "--batch", 2, "--seed", 1, "-o", tmp_path / "s.h5", "--dataset", "run/0",
                  "-q").exit_code == 0
    stacked = invoke("solve", tmp_path / "s.h5", "--report", tmp_path / "r.json", "-q")
    assert stacked.exit_code == 0 and json.loads((tmp_path / "r.json").read_text())["batch"] == 2
    import h5py  # anybody's attribute named as lapcli's mark, holding an array, was an internal error

    with h5py.File(tmp_path / "m.h5", "a") as handle:
        handle["run"].attrs["lapcli"] = np.array([1, 2])
    assert invoke("solve", tmp_path / "m.h5", "--solver", "numpy", "-o", "-", "-q").output.startswith("row,col\n")


def test_an_npy_output_for_a_ragged_batch_is_refused_before_the_solve(tmp_path, monkeypatch):
    import lapcli.pipeline

    np.savez(tmp_path / "r.npz", np.ones((2, 3)), np.ones((3, 3)))
    monkeypatch.setattr(lapcli.pipeline, "solve_batch", lambda *args, **kwargs: pytest.fail("solved first"))
    assert_one_line_error(invoke("solve", tmp_path / "r.npz", "-o", tmp_path / "c.npy"), 2, "several shapes")


def test_ragged_generation_needs_a_batch_and_a_file(tmp_path):
    assert_one_line_error(invoke("generate", "--n", 5, "--ragged", "-o", tmp_path / "a.npz"), 2, "--batch")
    assert_one_line_error(invoke("generate", "--n", 5, "--batch", 3, "--ragged", "-o", tmp_path / "a.npy"), 2, ".npz")


def bad_npz(tmp_path, case):
    """An NPZ file that NumPy's archive reader cannot give as a batch of matrices."""
    import zipfile

    path = tmp_path / f"{case}.npz"
    np.savez(tmp_path / "good.npz", np.eye(3), np.ones((2, 3)))
    data = (tmp_path / "good.npz").read_bytes()
    if case == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif case == "bad crc":
        damaged = bytearray(data)
        damaged[200] ^= 0xFF  # inside the first member's array data
        path.write_bytes(bytes(damaged))
    elif case in ("no npy member", "a text member"):
        with zipfile.ZipFile(path, "w") as archive:
            if case == "a text member":
                archive.writestr("a.npy", _npy_bytes(np.eye(2)))
            archive.writestr("notes.txt", "not an array")
    elif case == "an npy file":
        np.save(tmp_path / "m.npy", np.eye(3))
        path.write_bytes((tmp_path / "m.npy").read_bytes())
    elif case == "strings":
        np.savez(path, np.eye(2), np.array([["a", "b"], ["c", "d"]]), np.ones((2, 3)))
    elif case.startswith("scipy.sparse"):  # save_npz's members: data, indices, indptr (or row, col), format, shape
        import scipy.sparse

        made = scipy.sparse.csr_matrix if case.endswith("csr") else scipy.sparse.coo_array
        scipy.sparse.save_npz(path, made(np.arange(9.0).reshape(3, 3)))
    return path


def _npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@pytest.mark.parametrize("case, fragment", [
    ("truncated", "cannot read"),
    ("bad crc", "Bad CRC-32"),
    ("no npy member", "'notes.txt' is not a NumPy array"),
    ("a text member", "'notes.txt' is not a NumPy array"),
    ("an npy file", "not a zip archive"),
    ("strings", "has dtype <U1; lapcli reads numbers"),  # as for the same array saved as .npy
    # scipy.sparse.save_npz's archives: named, not by their first member ("format has dtype |S3")
    ("scipy.sparse csr", "holds a scipy.sparse matrix (save_npz); lapcli reads dense costs"),
    ("scipy.sparse coo", "holds a scipy.sparse matrix (save_npz); lapcli reads dense costs"),
])
def test_a_bad_npz_is_one_line_exit_2_and_writes_nothing(tmp_path, monkeypatch, case, fragment):
    path = bad_npz(tmp_path, case)
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert_one_line_error(invoke("solve", path, "-o", "cols.npz", "--report", "r.json"), 2, fragment)
    assert sorted(os.listdir(tmp_path)) == before


def test_an_npz_whose_arrays_are_named_as_a_sparse_archives_is_still_a_batch(tmp_path):
    """Only an archive whose "format" is a sparse format's name (what scipy.sparse.save_npz writes)
    is refused as a sparse matrix: matrices a user named data, shape and format are a batch."""
    np.savez(tmp_path / "d.npz", data=np.eye(2), shape=np.ones((3, 3)), format=np.zeros((2, 2)))
    result = invoke("solve", tmp_path / "d.npz", "-o", tmp_path / "cols.npz", "--quiet")
    assert result.exit_code == 0, result.output
    with np.load(tmp_path / "cols.npz") as answers:
        assert sorted(answers.files) == ["data", "format", "shape"]


@pytest.mark.parametrize("form, names, order", [
    ("npz", ["1", "0"], ["0", "1"]),  # numbers saved out of order: taken in numeric order
    ("npz", ["b", "a"], ["b", "a"]),  # other names: as the archive lists them
    ("h5", ["10", "9"], ["9", "10"]),  # a group: the same rule
    ("h5", ["1" + "0" * 4400, "010"], ["010", "1" + "0" * 4400]),  # past the 4300 digits int() converts
    ("h5", ["file", "allow_pickle"], ["allow_pickle", "file"]),  # np.savez's own keywords, as names
])
def test_a_batchs_answers_are_written_under_their_problems_names(tmp_path, form, names, order):
    costs = {names[0]: np.array([[9, 0], [0, 9], [5, 5]]), names[1]: np.array([[0, 9], [9, 0]])}
    answers = {names[0]: [1, 0, -1], names[1]: [0, 1]}  # the column of each row, −1 unassigned
    if form == "npz":
        np.savez(tmp_path / "b.npz", **costs)
        spec = tmp_path / "b.npz"
    else:
        with h5py.File(tmp_path / "b.h5", "w") as f:
            for name, cost in costs.items():
                f.create_dataset(f"g/{name}", data=cost)
        spec = f"{tmp_path / 'b.h5'}:/g"
    result = invoke("solve", spec, "-o", tmp_path / "cols.npz", "--json", "-q")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["objectives"] == [0 for _ in order]
    cols = np.load(tmp_path / "cols.npz")
    assert cols.files == order and all(cols[name].tolist() == answers[name] for name in order)
    pairs = {}  # CSV's problem b is the b-th in that order
    for line in invoke("solve", spec, "-o", "-", "-q").stdout.splitlines()[1:]:
        b, row, col = map(int, line.split(","))
        pairs.setdefault(b, []).append((row, col))
    assert [pairs[b] for b in range(2)] == [[(r, c) for r, c in enumerate(answers[n]) if c >= 0] for n in order]


def test_an_integer_members_objective_stays_exact_beside_a_float_member(tmp_path):
    """An NPZ batch of an int64 member past 2^53 and a float member: the integer objective is the
    exact sum in the JSON report, not rounded to float64 with the float one."""
    big = 2**53
    np.savez(tmp_path / "mix.npz", np.array([[big + 1, big + 2], [big - 1, big + 1]], dtype=np.int64),
             np.array([[0.5, 1.0], [1.0, 0.5]]))
    result = invoke("solve", tmp_path / "mix.npz", "--json", "-q")
    assert result.exit_code == 0, result.stderr
    objectives = json.loads(result.stdout)["objectives"]
    assert objectives[0] == 2 * big + 1 and type(objectives[0]) is int and objectives[1] == 1.0
