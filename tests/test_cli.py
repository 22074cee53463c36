"""The `lap` command: formats, reports, exit codes, one-line errors, no partial files."""

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from click.testing import CliRunner
from scipy.optimize import linear_sum_assignment as scipy_lsa

from lapcli.cli.main import cli
from lapcli.errors import LapInputError

LAP = [sys.executable, "-m", "lapcli"]


def invoke(*args, input=None):
    return CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)


def scipy_objective(cost, maximize=False):
    rows, cols = scipy_lsa(cost, maximize=maximize)
    return cost[rows, cols].sum()


def assert_one_line_error(result, code, fragment):
    assert result.exit_code == code, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and fragment in lines[0], result.stderr
    assert "Traceback" not in result.output


# ----------------------------------------------------------------------------- generate
def test_generate_is_reproducible_with_a_seed(tmp_path):
    for name in ("a.npy", "b.npy"):
        assert invoke("generate", "--n", 40, "--m", 30, "--range", 10, "--seed", 5, "-o", tmp_path / name).exit_code == 0
    a, b = np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy")
    assert a.shape == (40, 30) and a.dtype == np.int32 and np.array_equal(a, b)
    assert invoke("generate", "--n", 40, "--seed", 6, "-o", tmp_path / "c.npy").exit_code == 0
    assert not np.array_equal(np.load(tmp_path / "c.npy")[:, :30], a)


@pytest.mark.parametrize("shape", [("--n", 2), ("--n", 2, "--m", 1), ("--n", 3), ("--n", 10, "--m", 2, "--range", 0.2),
                                   ("--n", 2, "--dtype", "float64")])
def test_a_generated_csv_reads_back_whatever_its_first_row(tmp_path, shape):
    """A first row 0,1,…,m−1 (--n 2: 1 seed in 4; --m 1: every other seed) was refused by lap solve
    as possibly pandas' column labels; generate now marks it as data (io.formats.DATA_FOLLOWS)."""
    from lapcli.generate import generate

    n, m = int(shape[1]), int(shape[3]) if "--m" in shape else int(shape[1])  # floats too: %.17g writes 0,1
    range_factor = float(shape[-1]) if "--range" in shape else 1.0
    ambiguous = 0
    for seed in range(1, 25) if n != 3 else range(30, 40):  # 3 × 3: seed 35's first row is 0,1,2
        assert invoke("generate", *shape, "--seed", seed, "-o", tmp_path / "g.csv", "-q").exit_code == 0
        cost = generate(n, m, range_factor=range_factor, seed=seed, dtype="float64" if "float64" in shape else None)
        ambiguous += np.array_equal(cost[0], np.arange(m))
        assert np.array_equal(np.loadtxt(tmp_path / "g.csv", delimiter=",", ndmin=2), cost)  # numpy skips the mark
        for source in (tmp_path / "g.csv", "-"):
            result = invoke("solve", source, "--json", "-q", input=(tmp_path / "g.csv").read_bytes())
            assert result.exit_code == 0, result.output
            assert json.loads(result.stdout)["objective"] == scipy_objective(cost)
    assert ambiguous  # the case the mark is for came up


def test_generate_without_seed_prints_the_seed_that_reproduces_it(tmp_path):
    result = invoke("generate", "--n", 20, "-o", tmp_path / "a.npy")
    seed = int(result.stderr.split("seed")[1].split()[0])
    invoke("generate", "--n", 20, "--seed", seed, "-o", tmp_path / "b.npy")
    assert np.array_equal(np.load(tmp_path / "a.npy"), np.load(tmp_path / "b.npy"))


@pytest.mark.parametrize("args", [["--n", 20], ["--points", "--n", 20, "--d", 3]])
def test_generate_to_stdout_without_seed_prints_the_seed_on_stderr(args):
    drawn = subprocess.run(LAP + ["generate", *map(str, args)], capture_output=True, timeout=120)
    assert drawn.returncode == 0 and drawn.stderr.decode().startswith("seed ")
    seed = drawn.stderr.decode().split()[1]
    again = subprocess.run(LAP + ["generate", *map(str, args), "--seed", seed], capture_output=True, timeout=120)
    assert again.stdout == drawn.stdout and again.stderr == b""


@pytest.mark.parametrize("name, args", [("[/x].npy", []), ("[red]y.npy", []), ("[/r].npz", ["--batch", 2, "--ragged"]),
                                        ("[/p].npy", ["--points"]), (":smile:.npy", []),
                                        (":thumbs_up:.npz", ["--batch", 2, "--ragged"])])
def test_an_output_path_with_brackets_is_printed_as_it_is(tmp_path, name, args):
    """Rich's markup ([red]) and emoji codes (:smile:) in a file name are printed as written."""
    (tmp_path / "[").mkdir()
    result = invoke("generate", "--n", 4, "--seed", 1, *args, "-o", tmp_path / name)
    assert result.exit_code == 0 and f"wrote {tmp_path / name} (" in result.stderr
    assert (tmp_path / name).exists()
    if not args:  # several inputs: each one's heading names it as written
        solved = invoke("solve", tmp_path / name, tmp_path / name)
        assert solved.exit_code == 0 and f"{tmp_path / name}" in solved.stderr


@pytest.mark.parametrize("range_factor, high", [(0.001, 1), (0.5, 100), (10, 2000), (1000, 200000)])
def test_uniform_values_follow_the_papers_range(tmp_path, range_factor, high):
    invoke("generate", "--n", 200, "--range", range_factor, "--seed", 1, "-o", tmp_path / "m.npy")
    matrix = np.load(tmp_path / "m.npy")
    assert matrix.min() >= 0 and matrix.max() < high
    if high > 1:
        assert matrix.max() >= high * 0.9  # the top of the range is reached


def test_generated_kinds_have_their_properties(tmp_path):
    invoke("generate", "--n", 60, "--kind", "float", "--seed", 2, "-o", tmp_path / "f.npy")
    floats = np.load(tmp_path / "f.npy")
    assert floats.dtype == np.float64 and 0 <= floats.min() and floats.max() < 1
    invoke("generate", "--n", 60, "--kind", "geometric", "--seed", 2, "-o", tmp_path / "g.npy")
    geometric = np.load(tmp_path / "g.npy")
    assert 0 <= geometric.min() and geometric.max() <= 2
    invoke("generate", "--n", 60, "--kind", "sanity", "--seed", 2, "-o", tmp_path / "s.npy")
    sanity = np.load(tmp_path / "s.npy")
    rows, cols = scipy_lsa(sanity)
    assert np.array_equal(cols, np.arange(60))  # the identity is the optimum


@pytest.mark.parametrize("suffix", [".csv", ".h5"])
def test_generate_writes_csv_and_hdf5(tmp_path, suffix):
    path = tmp_path / f"m{suffix}"
    invoke("generate", "--n", 12, "--seed", 3, "--dtype", "float32", "-o", path)
    result = invoke("solve", path, "--json", "--solver", "scipy")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_rows"] == 12


@pytest.mark.parametrize("n, exact", [(20000, False), (16384, True)])  # values below 2·10^7, 1.6384·10^7
def test_generate_refuses_uniform_integers_a_float_dtype_would_round(tmp_path, n, exact):
    path = tmp_path / "f.npy"
    result = invoke("generate", "--n", n, "--m", 1, "--range", 1000, "--dtype", "float32", "--seed", 1, "-o", path)
    if exact:  # below 2^24: every integer is a float32
        assert result.exit_code == 0 and np.load(path).max() > 2**23
    else:
        assert_one_line_error(result, 2, "not exact in float32 (past 2^24)")
        assert not path.exists()
    from lapcli.generate import generate

    with pytest.raises(LapInputError, match="not exact in float64"):  # the library's call, past 2^53
        generate(2**20, 1, range_factor=2.0**33 + 1, dtype="float64")


def test_generate_to_a_terminal_is_a_usage_error(monkeypatch):
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True, raising=False)
    from lapcli.cli.main import main

    with pytest.raises(SystemExit) as exited:
        main(["generate", "--n", "5"])
    assert exited.value.code == 2


def test_generate_writes_npy_to_a_pipe():
    result = invoke("generate", "--n", 7, "--seed", 1)
    assert np.load(io.BytesIO(result.stdout_bytes)).shape == (7, 7)


@pytest.mark.parametrize("kind", ["float", "geometric", "sanity"])
@pytest.mark.parametrize("dtype", ["int32", "int64"])
def test_float_kinds_refuse_integer_dtypes_instead_of_writing_zeros(tmp_path, kind, dtype):
    result = invoke("generate", "--n", 5, "--kind", kind, "--dtype", dtype, "--seed", 1, "-o", tmp_path / "m.npy")
    assert_one_line_error(result, 2, f"{dtype} would truncate them")
    assert not (tmp_path / "m.npy").exists()


def test_generate_dash_output_is_npy_on_stdout_not_a_file_named_dash(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = invoke("generate", "--n", 7, "--seed", 1, "-o", "-")
    assert result.exit_code == 0, result.output
    assert np.load(io.BytesIO(result.stdout_bytes)).shape == (7, 7)
    assert os.listdir(tmp_path) == []



def fake_physical_memory(monkeypatch, gib):
    real_sysconf = os.sysconf
    pages = int(gib * 2**30) // real_sysconf("SC_PAGE_SIZE")
    monkeypatch.setattr(os, "sysconf", lambda name: pages if name == "SC_PHYS_PAGES" else real_sysconf(name))


def refuse_to_generate(*args, **kwargs):
    raise AssertionError("the size check let it through: it would be generated")


def test_generate_refuses_a_matrix_whose_blocks_need_more_memory_than_the_machine(tmp_path, monkeypatch):
    """A block of 1024 rows is drawn in int64 and cast, while the writer holds the block before:
    16 bytes an entry for int32, not 4. At 3,000,000 × 3,000,000 a block needs 46 GiB."""
    import lapcli.cli.main

    fake_physical_memory(monkeypatch, 20)  # 4 bytes an entry would make it 11.4 GiB: "fits"
    assert invoke("generate", "--n", 2000, "--seed", 1, "-o", tmp_path / "small.npy").exit_code == 0
    monkeypatch.setattr(lapcli.cli.main, "generate_blocks", refuse_to_generate)
    result = invoke("generate", "--n", 3_000_000, "--m", 3_000_000, "-o", tmp_path / "big.npy")
    assert_one_line_error(result, 2, "more than this machine's 20 GiB of memory")
    assert os.listdir(tmp_path) == ["small.npy"]


def test_generate_refuses_point_sets_larger_than_memory_or_their_file_system(tmp_path, monkeypatch):
    """As a matrix is: 10^9 clustered 2-D points take ~60 GiB to make (labels, three float64 arrays, the cast)."""
    from collections import namedtuple

    from lapcli.io import targets

    fake_physical_memory(monkeypatch, 20)
    with monkeypatch.context() as patched:  # the check must come before any point is drawn
        patched.setattr(np.random, "default_rng", refuse_to_generate)
        result = invoke("generate", "--points", "--n", 10**9, "--kind", "clustered", "-o", tmp_path / "p.npy")
    assert_one_line_error(result, 2, "points of 2 coordinates take about 59.6 GiB to make, more than this machine's")
    assert invoke("generate", "--points", "--n", 1000, "--seed", 1, "-o", tmp_path / "small.npy").exit_code == 0
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(targets.shutil, "disk_usage", lambda path: usage(10**6, 0, 10**4))
    result = invoke("generate", "--points", "--n", 1000, "--seed", 1, "-o", tmp_path / "p.npy")  # 16,000 bytes
    assert_one_line_error(result, 2, "it takes at least 16,000 bytes, and its file system has 10,000 bytes free")
    assert os.listdir(tmp_path) == ["small.npy"]


def test_a_size_past_a_terabyte_is_told_in_its_unit(tmp_path, monkeypatch):
    """Said as "4,000,000.0 GB" before: sizes up to petabytes take their unit."""
    from collections import namedtuple

    from lapcli.io import targets

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(targets.shutil, "disk_usage", lambda path: usage(10**16, 0, 3 * 10**12))
    with pytest.raises(LapInputError, match=r"at least 4\.0 PB, and its file system has 3\.0 TB free"):
        targets.check_room(str(tmp_path / "x.npy"), 5 * 10**14, "int64")


def test_generate_refuses_a_ragged_batch_larger_than_memory(tmp_path, monkeypatch):
    import lapcli.generate

    monkeypatch.setattr(lapcli.generate, "generate", refuse_to_generate)  # each problem of the batch
    result = invoke("generate", "--batch", 100_000_000, "--n", 1000, "--ragged", "-o", tmp_path / "x.npz")
    assert_one_line_error(result, 2, "of memory")  # ~250,000 entries a problem: about 90 TiB
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("args", [["--ragged", "--batch", 3, "-o", "r.npz:"], ["--ragged", "--batch", 3, "-o", "r.npz:x"],
                                  ["-o", "m.npy:/x"], ["-o", "m.csv:x"]])
def test_generate_names_a_dataset_given_to_a_file_that_holds_none(tmp_path, monkeypatch, args):
    """'-o r.npz:' was an "unknown ragged batch extension '.npz:'", '-o m.npy:/x' one of '(none)'."""
    monkeypatch.chdir(tmp_path)
    result = invoke("generate", "--n", 4, *args)
    assert_one_line_error(result, 2, "only an HDF5 file (.h5, .hdf5) takes a dataset after ':'; give ")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("kind, dtype", [("uniform", "int32"), ("uniform", "int64"), ("uniform", "float64"),
                                         ("float", "float32"), ("float", "float64"), ("geometric", "float32"),
                                         ("geometric-int", "int64"), ("sanity", "float32")])
def test_the_memory_check_counts_what_generating_and_writing_a_block_takes(tmp_path, kind, dtype):
    import tracemalloc

    from lapcli.generate import block_bytes, check_block_fits, generate_blocks
    from lapcli.io.write import write_matrix_blocks

    n = m = 2048
    tracemalloc.start()
    try:
        write_matrix_blocks(str(tmp_path / "m.npy"), (n, m), dtype, generate_blocks(n, m, seed=1, kind=kind, dtype=dtype))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    counted = block_bytes(n, m, kind, dtype)
    assert 0.9 * counted <= peak <= counted, (peak, counted)
    check_block_fits(n, m, kind, dtype, memory=counted)
    with pytest.raises(LapInputError, match="GiB"):
        check_block_fits(n, m, kind, dtype, memory=counted - 1)


@pytest.mark.parametrize("batch, n, suffix", [(200, 200, ".npz"), (200, 200, ".h5"), (20_000, 10, ".npz")])
def test_the_memory_check_counts_what_a_ragged_batch_takes(tmp_path, batch, n, suffix):
    import tracemalloc

    from lapcli.generate import check_ragged_fits, generate_ragged, ragged_bytes
    from lapcli.io.write import members_bytes, write_bytes

    path = str(tmp_path / f"r{suffix}")
    tracemalloc.start()
    try:  # what lap generate --ragged does
        arrays = generate_ragged(batch, n, seed=1)
        write_bytes(path, members_bytes(path, arrays, "costs"))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    counted = ragged_bytes(batch, n, n, "uniform", "int32")
    assert 0.6 * counted <= peak <= counted, (peak, counted)
    check_ragged_fits(batch, n, n, "uniform", "int32", memory=counted)
    with pytest.raises(LapInputError, match="GiB"):
        check_ragged_fits(batch, n, n, "uniform", "int32", memory=counted - 1)

# ----------------------------------------------------------------------------- solve: inputs
def write_inputs(tmp_path, cost):
    np.save(tmp_path / "m.npy", cost)
    with open(tmp_path / "m.csv", "w") as f:
        f.write("a,b,c,d\n" + "\n".join(",".join(map(str, row)) for row in cost) + "\n")
    with open(tmp_path / "m.tsv", "w") as f:
        f.write("\n".join("\t".join(map(str, row)) for row in cost) + "\n")
    with open(tmp_path / "m.txt", "w") as f:
        f.write("\n".join("  ".join(map(str, row)) for row in cost) + "\n")
    with h5py.File(tmp_path / "m.h5", "w") as f:
        f.create_dataset("group/costs", data=cost)
    return ["m.npy", "m.csv", "m.tsv", "m.txt", "m.h5", "m.h5:/group/costs"]


def test_every_input_format_gives_scipys_objective(tmp_path, rng):
    cost = rng.integers(0, 50, (9, 4))
    for name in write_inputs(tmp_path, cost):
        result = invoke("solve", tmp_path / name, "--json", "--quiet")
        assert result.exit_code == 0, (name, result.output)
        assert json.loads(result.stdout)["objective"] == scipy_objective(cost), name


def test_stdin_accepts_npy_and_csv(rng):
    cost = rng.integers(0, 20, (6, 6))
    buffer = io.BytesIO()
    np.save(buffer, cost)
    for data in (buffer.getvalue(), "\n".join(",".join(map(str, r)) for r in cost).encode()):
        result = invoke("solve", "-", "--json", input=data)
        assert json.loads(result.stdout)["objective"] == scipy_objective(cost)
    # two arrays piped as one stream: the second was dropped without a word
    doubled = buffer.getvalue() * 2
    assert_one_line_error(invoke("solve", "-", "--json", input=doubled), 2,
                          f"stdin holds more than its NPY array ({len(buffer.getvalue()):,} bytes after it)")
    result = invoke("solve", "-", "--json", input=buffer.getvalue() + b"\n")  # a newline a tool appended
    assert json.loads(result.stdout)["objective"] == scipy_objective(cost)


def test_a_file_name_with_a_newline_or_an_escape_is_named_on_one_line(tmp_path):
    """A name's newline split the error over two lines; an escape sequence drove the terminal."""
    for name in ("no\nfile.csv", "no\x1b[31mred.csv"):
        result = invoke("solve", tmp_path / name, "-q")
        shown = str(tmp_path / name).encode("unicode_escape").decode("ascii")
        assert_one_line_error(result, 2, f"no such file: {shown}")
        assert "\x1b" not in result.stderr


def test_an_npy_file_of_two_arrays_is_refused_as_stdin_is(tmp_path, rng):
    """cat a.npy b.npy > two.npy: np.load reads the first and drops the second, as stdin's was;
    a newline a tool appended is no array."""
    cost = rng.integers(0, 20, (6, 6))
    buffer = io.BytesIO()
    np.save(buffer, cost)
    (tmp_path / "two.npy").write_bytes(buffer.getvalue() * 2)
    (tmp_path / "newline.npy").write_bytes(buffer.getvalue() + b"\n")
    assert_one_line_error(invoke("solve", tmp_path / "two.npy", "-o", tmp_path / "a.csv"), 2,
                          f"two.npy holds more than its NPY array ({len(buffer.getvalue()):,} bytes after it)")
    assert not (tmp_path / "a.csv").exists()
    result = invoke("solve", tmp_path / "newline.npy", "--json", "--quiet")
    assert json.loads(result.stdout)["objective"] == scipy_objective(cost)


def test_report_has_the_documented_fields(tmp_path, rng):
    np.save(tmp_path / "m.npy", rng.integers(0, 100, (30, 30)))
    result = invoke("solve", tmp_path / "m.npy", "--report", tmp_path / "r.json", "--solver", "numpy")
    assert result.exit_code == 0
    report = json.loads((tmp_path / "r.json").read_text())
    for key in ("objective", "n_rows", "n_cols", "maximize", "solver", "device", "dtype", "total_ms", "steps", "version"):
        assert key in report
    assert [s["step"] for s in report["steps"]] == [1, 2, 3, 4, 5, 6]
    assert set(report["steps"][0]) == {"step", "name", "count", "ms"}
    assert "Hungarian steps" in result.stderr and "share" in result.stderr


@pytest.mark.parametrize("suffix", [".csv", ".npy", ".json", "-"])
def test_assignment_outputs(tmp_path, rng, suffix):
    cost = rng.integers(0, 30, (5, 8))
    target = "-" if suffix == "-" else tmp_path / f"a{suffix}"
    np.save(tmp_path / "m.npy", cost)
    result = invoke("solve", tmp_path / "m.npy", "-o", target, "--quiet")
    assert result.exit_code == 0, result.output
    if suffix == ".npy":
        column_of_row = np.load(target)
        rows = np.arange(5)
        cols = column_of_row
    elif suffix == ".json":
        data = json.loads(target.read_text())
        rows, cols = np.array(data["row_ind"]), np.array(data["col_ind"])
    else:
        text = result.stdout if suffix == "-" else target.read_text()
        lines = text.strip().splitlines()
        assert lines[0] == "row,col"
        rows, cols = np.array([[int(x) for x in line.split(",")] for line in lines[1:]]).T
    assert cost[rows, cols].sum() == scipy_objective(cost)


def test_maximize_and_solver_options(tmp_path, rng):
    cost = rng.integers(0, 100, (20, 20))
    np.save(tmp_path / "m.npy", cost)
    for solver in ("numpy", "scipy", "auto"):
        result = invoke("solve", tmp_path / "m.npy", "--maximize", "--solver", solver, "--json")
        report = json.loads(result.stdout)
        assert report["objective"] == scipy_objective(cost, maximize=True) and report["maximize"] is True


# ----------------------------------------------------------------------------- solve: text never guesses
def csv_text(cost, header=None, index=False):
    """CSV as pandas' ``to_csv()`` writes it (header = column labels, index = row labels), by hand."""
    lines = [] if header is None else [header]
    for i, row in enumerate(cost):
        lines.append(",".join(([str(i)] if index else []) + [str(v) for v in row]))
    return "\n".join(lines) + "\n"


def solve_text(tmp_path, text, *options, name="m.csv"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return invoke("solve", path, "--json", "--solver", "scipy", *options)


def test_pandas_column_labels_as_first_line_are_ambiguous_not_data(tmp_path, rng):
    cost = rng.integers(0, 20, (4, 3))
    text = csv_text(cost, header="0,1,2")  # pandas' to_csv(index=False) of a 4×3 frame
    assert_one_line_error(solve_text(tmp_path, text), 2, "pass --header or --no-header")
    result = solve_text(tmp_path, text, "--header")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["n_rows"], report["n_cols"]) == (4, 3)
    assert report["objective"] == scipy_objective(cost)


@pytest.mark.parametrize("text", ["# costs, seed 1\n4 1 3\n2 0 5\n3 2 2\n",  # np.savetxt(header=...): a comma
                                  "# costs seed 1\n4 1 3\n2 0 5\n3 2 2\n",  # digits beside text
                                  "4 1 3\n2 0 5 # x, y\n3 2 2\n",  # an inline comment
                                  "# made by hand\n\n# costs:\n4,1,3\n2,0,5  # row 2\n3,2,2\n"])
def test_comments_are_neither_a_header_nor_the_delimiter(tmp_path, text):
    """'#' starts a comment for the parser (np.loadtxt): its commas and numbers once chose the
    delimiter and made a "header" that mixed numbers and text, and the file was refused."""
    (tmp_path / "c.txt").write_text(text)
    result = invoke("solve", tmp_path / "c.txt", "--json", "-q")
    assert result.exit_code == 0, result.output
    cost = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    assert json.loads(result.stdout)["objective"] == scipy_objective(cost) and result.stderr == ""


def test_no_header_on_a_text_header_names_line_and_column(tmp_path):
    result = solve_text(tmp_path, "a,b\n1,2\n3,4\n", "--no-header")
    assert_one_line_error(result, 2, "m.csv line 1, column 1: 'a' is not a number")


def test_guessed_header_is_skipped_and_said_on_stderr(tmp_path):
    result = solve_text(tmp_path, "a,b,c\n1,2,3\n4,5,6\n")
    assert result.exit_code == 0 and json.loads(result.stdout)["n_rows"] == 2
    assert "skipped header line of " in result.stderr and "m.csv: a,b,c" in result.stderr
    assert result.stderr.count("skipped header line") == 1  # said ahead of the solve, not again in the summary
    assert "skipped header" not in solve_text(tmp_path, "a,b,c\n1,2,3\n4,5,6\n", "--quiet").stderr


def test_bom_before_a_numeric_first_row_keeps_it_as_data(tmp_path):
    result = solve_text(tmp_path, b"\xef\xbb\xbf5,3\n1,4\n")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["n_rows"] == 2 and report["objective"] == 4
    assert "skipped header" not in result.stderr


def test_bom_before_a_text_header_is_a_header(tmp_path):
    result = solve_text(tmp_path, b"\xef\xbb\xbfa,b\n1,4\n3,1\n")
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == 2
    assert "m.csv: a,b\n" in result.stderr  # the BOM is not part of the header either


def test_typo_in_the_first_row_is_an_error_not_a_header(tmp_path):
    result = solve_text(tmp_path, "1,2,x\n4,5,6\n7,8,9\n")
    assert_one_line_error(result, 2, "m.csv line 1, column 3: 'x' is not a number (use --header if line 1 is a header)")


def test_a_first_row_named_by_a_word_names_both_ways_out(tmp_path):
    """'x,1,2' first: a row's name (--index-col) or a header (--header); the second row's word names
    --index-col already, the first named only --header, whose advice led to that second refusal."""
    result = solve_text(tmp_path, "x,1,2\ny,3,4\n")
    assert_one_line_error(result, 2, "m.csv line 1, column 1: 'x' is not a number (pass --index-col if its first "
                                     "column names the rows, or --header if line 1 is a header)")
    assert json.loads(solve_text(tmp_path, "x,1,2\ny,3,4\n", "--index-col").stdout)["objective"] == 5


def test_non_numeric_value_names_its_line_in_the_file(tmp_path):
    result = solve_text(tmp_path, "\na,b\n\n1,2\n3,x\n")  # blank lines count: line 5 of the file
    assert_one_line_error(result, 2, "m.csv line 5, column 2: 'x' is not a number")


@pytest.mark.parametrize("value", ["1_000", "\uff14", "\u0664"])  # Python's float() reads them, np.loadtxt may not
def test_a_value_only_python_reads_as_a_number_is_named_at_its_line(tmp_path, value):
    try:  # NumPy 2.4 reads none of them; another version reads the fullwidth 4: read then as NumPy reads it
        read = int(np.loadtxt([f"3,{value}"], delimiter=",", dtype=np.int64)[1])
    except ValueError:
        read = None
    result = solve_text(tmp_path, f"# c\n\n1,2\n3,{value}\n")
    if read is not None:
        assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(np.array([[1, 2], [3, read]]))
        return
    assert_one_line_error(result, 2, f"m.csv line 4, column 2: {value!r} is not a number")
    result = solve_text(tmp_path, f"{value},{value}\n3,4\n5,6\n")  # on the first line: numbers, not a header
    assert_one_line_error(result, 2, f"m.csv line 1, column 1: {value!r} is not a number")


def test_pandas_index_column_is_refused_without_index_col_and_dropped_with_it(tmp_path, rng):
    cost = rng.integers(0, 20, (3, 3))
    text = csv_text(cost, header=",0,1,2", index=True)  # pandas' default to_csv()
    assert_one_line_error(solve_text(tmp_path, text), 2, "looks like it has an index column (empty first header field); pass --index-col")
    assert_one_line_error(solve_text(tmp_path, text, "--header"), 2, "pass --index-col")
    result = solve_text(tmp_path, text, "--index-col")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["n_rows"], report["n_cols"]) == (3, 3) and report["objective"] == scipy_objective(cost)


def test_space_separated_index_column_is_refused_without_index_col(tmp_path, rng):
    """--header settles the first line, which may be a title: a header one label short is then
    solved as given, its note saying what --index-col would drop."""
    cost = rng.integers(0, 20, (3, 3))
    text = csv_text(cost, header=" 0 1 2", index=True).replace(",", " ")  # to_csv(sep=" ")
    assert_one_line_error(solve_text(tmp_path, text, name="m.txt"), 2, "--header or --no-header")
    titled = solve_text(tmp_path, text, "--header", name="m.txt")
    assert titled.exit_code == 0 and json.loads(titled.stdout)["n_cols"] == 4
    assert "m.txt: line 1 has 3 columns, line 2 has 4; if its first column labels the rows, pass --index-col" \
        in titled.stderr
    result = solve_text(tmp_path, text, "--index-col", name="m.txt")
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost)


@pytest.mark.parametrize("delimiter, name", [(",", "m.csv"), ("\t", "m.tsv")])
def test_a_header_one_label_short_of_the_rows_is_an_index_column(tmp_path, rng, delimiter, name):
    """pandas' to_csv(index_label=False) and R's write.table(sep=",") label the columns only: the
    index column was solved as costs (a 3 × 4 problem, objective 2 for the 3 × 3 one's 5), silently
    but for a "skipped header" note. Refused as the space-separated form is; a header with more
    labels than the rows have columns is refused too."""
    cost = rng.integers(1, 20, (3, 3))
    text = csv_text(cost, header="a,b,c", index=True).replace(",", delimiter)
    assert_one_line_error(solve_text(tmp_path, text, name=name), 2, "looks like it has an index column (line 1 has "
                          "3 columns, line 2 has 4); pass --index-col to drop it, or --header if line 1 is a title")
    result = solve_text(tmp_path, text, "--index-col", name=name)
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost)
    wide = csv_text(cost, header="a,b,c,d").replace(",", delimiter)
    assert_one_line_error(solve_text(tmp_path, wide, name=name), 2, "its header (line 1) has 4 labels and line 2 3 "
                          "columns; a header labels the columns (--header if line 1 is a title)")
    result = solve_text(tmp_path, wide, "--header", name=name)  # a title of more words than the rows' fields
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost)
    # what a header may hold: a '#' or the delimiter in a quoted label, a trailing delimiter, a comment
    for header in ("task#1,task#2,task#3", '"a","b, #2","c"', "a,b,c,", "a,b,c # costs, seed 1", "a,b,c,# costs"):
        result = solve_text(tmp_path, csv_text(cost, header=header).replace(",", delimiter), name=name)
        assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost), header
    pair = rng.integers(1, 20, (2, 2))  # task#1 is one label (np.loadtxt would read a comment): two over two columns
    result = solve_text(tmp_path, csv_text(pair, header="task#1,task#2").replace(",", delimiter), name=name)
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(pair)


def test_space_separated_quoted_labels_count_as_one_each(tmp_path, rng):
    """csv.writer(delimiter=" ") quotes a label holding a space; R's write.table adds quoted row names."""
    cost = rng.integers(0, 20, (2, 2))
    rows = "".join(f"{a} {b}\n" for a, b in cost)
    for header in ('"job a" "job b"', 'a b # two labels, then a comment'):
        result = solve_text(tmp_path, f"{header}\n" + rows, name="m.txt")
        assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost), header
    result = solve_text(tmp_path, '"job a" "job b"\n' + rows, "--header", name="m.txt")
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost)
    named = '"job a" "job b"\n' + "".join(f'"r{i}" {a} {b}\n' for i, (a, b) in enumerate(cost))
    result = solve_text(tmp_path, named, "--index-col", name="m.txt")
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost)
    # quoted numbers are numbers between spaces as between commas: the first line is data, not a header;
    # a comment or spaces after them (np.loadtxt read an empty field after a quote and a space)
    quoted = "".join(f'"{a}" "{b}"\n' for a, b in cost)
    commented = "".join(f'"{a}" {b} # row {i}\n' for i, (a, b) in enumerate(cost))
    for text in (quoted, quoted.replace(" ", "\t"), quoted.replace(" ", ","), quoted.replace("\n", " \n"), commented):
        result = solve_text(tmp_path, text, name="m.txt")
        assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost), text
        assert "header" not in result.stderr
    # an empty quoted index ("") is a field, and a lone quote is named where it stands
    named = '"a" "b"\n' + "".join(f'"{"" if i == 0 else i}" {a} {b}\n' for i, (a, b) in enumerate(cost))
    result = solve_text(tmp_path, named, "--index-col", name="m.txt")
    assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost)
    assert_one_line_error(solve_text(tmp_path, '1 2 "\n3 4\n', name="m.txt"), 2,
                          "m.txt line 1: a quote opens a field and is not closed on that line")
    # a quote inside a field is the field's: "job"1 is job1 (one index), 6" six inches (np.loadtxt's reading)
    for index in ('"job"{}', '{}"'):
        text = '"a" "b"\n' + "".join(f"{index.format(i)} {a} {b}\n" for i, (a, b) in enumerate(cost))
        result = solve_text(tmp_path, text, "--index-col", name="m.txt")
        assert result.exit_code == 0 and json.loads(result.stdout)["objective"] == scipy_objective(cost), text


def test_a_quoted_index_holding_a_hash_is_read_alike_alone_or_beside_another_input(tmp_path):
    """The check of several inputs' heads cut each line at its first '#', quoted or not: a file read
    alone was refused as ragged beside another."""
    (tmp_path / "m.csv").write_text(',a,b\n"r#1",1,2\nr2,3,4\n')
    (tmp_path / "inches.txt").write_text('a b\n6" 1 2\n7" 3 4 # a comment\n')  # an unquoted quote: no quoting
    for inputs in (["m.csv"], ["m.csv", "m.csv"], ["inches.txt", "inches.txt"]):
        result = invoke("solve", *[tmp_path / name for name in inputs], "--index-col", "--json", "-q")
        assert result.exit_code == 0, result.output
        reports = [json.loads(result.stdout)] if len(inputs) == 1 else [json.loads(line) for line in
                                                                         result.stdout.splitlines()]
        assert [report["objective"] for report in reports] == [5] * len(inputs)


def test_text_options_on_npy_input_are_refused(tmp_path):
    np.save(tmp_path / "m.npy", np.eye(2))
    assert_one_line_error(invoke("solve", tmp_path / "m.npy", "--header"), 2, "apply to text input only")


def test_read_matrix_with_info_says_what_it_skipped(tmp_path):
    from lapcli.io.read import read_matrix, read_matrix_with_info

    (tmp_path / "m.csv").write_text("a,b\n1,2\n")
    matrix, source = read_matrix_with_info(str(tmp_path / "m.csv"))
    assert source.skipped_header == "a,b" and matrix.tolist() == [[1, 2]]
    assert read_matrix(str(tmp_path / "m.csv")).tolist() == [[1, 2]]  # existing callers: the array only


# ----------------------------------------------------------------------------- solve: errors
def error_cases(tmp_path):
    (tmp_path / "empty.npy").write_bytes(b"")
    (tmp_path / "m.xyz").write_text("1,2\n3,4\n")
    (tmp_path / "ragged.csv").write_text("1,2,3\n4,5\n")
    (tmp_path / "words.csv").write_text("1,2\n3,abc\n")
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2, 2)))  # 3-D is a stack; 4-D is nothing
    np.save(tmp_path / "strings.npy", np.array([["a", "b"], ["c", "d"]]))
    np.save(tmp_path / "nan.npy", np.array([[np.nan, 1.0], [1.0, 0.0]]))
    np.save(tmp_path / "objects.npy", np.array([[1, None]], dtype=object), allow_pickle=True)
    with h5py.File(tmp_path / "none.h5", "w") as f:
        f.create_dataset("v", data=np.zeros(3))
    with h5py.File(tmp_path / "two.h5", "w") as f:
        f.create_dataset("a", data=np.zeros((2, 2)))
        f.create_dataset("b", data=np.zeros((2, 2)))
    with h5py.File(tmp_path / "rank.h5", "w") as f:
        f.create_dataset("costs", data=np.zeros((2, 2, 2, 2)))
    with h5py.File(tmp_path / "text.h5", "w") as f:
        f.create_dataset("costs", data=np.array([[b"a", b"b"]]))
    with h5py.File(tmp_path / "links.h5", "w") as f:
        f.create_dataset("x", data=np.eye(2))
        f["soft"] = h5py.SoftLink("/nowhere")
        f["external"] = h5py.ExternalLink("missing.h5", "/x")
    (tmp_path / "comments.csv").write_text("a,b\n# nothing but a comment\n")
    (tmp_path / "text.npy").write_text("not an npy file\n")  # once "holds Python objects" (np.load's pickle)
    np.save(tmp_path / "ok.npy", np.eye(3))
    np.save(tmp_path / "long.npy", np.eye(3, dtype=np.longdouble))  # float128 on x86-64, float64 elsewhere
    with h5py.File(tmp_path / "long.h5", "w") as f:
        f["costs"] = np.eye(3, dtype=np.longdouble)
        f["batch/a"], f["batch/b"] = np.eye(2), np.eye(2, dtype=np.longdouble)
    (tmp_path / "spaced.csv").write_text('"4", "1"\n"2", "0"\n')  # a quote after ", " is no quote to np.loadtxt
    (tmp_path / "spaced2.csv").write_text('4,1\n2, "0"\n')
    return {
        "missing": (["nothere.npy"], "no such file"),
        "extension": (["m.xyz"], "unknown file extension"),
        "empty": (["empty.npy"], "is empty"),
        "ragged": (["ragged.csv"], "ragged rows"),
        "non-numeric": (["words.csv"], "words.csv line 2, column 2: 'abc' is not a number"),
        "4-D": (["cube.npy"], "4-D: expected a matrix (2-D) or a stack of matrices (3-D)"),
        "strings": (["strings.npy"], "strings.npy has dtype <U1; lapcli reads numbers"),  # once NumPy's cast words
        **({"long double": (["long.npy"], "long.npy has dtype float128, wider than float64"),  # NumPy's cast words
            "long double h5": (["long.h5:/costs"], "long.h5:/costs has dtype float128, wider than float64"),
            "long double member": (["long.h5:/batch"], "is a group (b holds float128)")}
           if np.dtype(np.longdouble).itemsize > 8 else {}),
        "objects": (["objects.npy"], "Python objects"),
        "spaced quote": (["spaced.csv"], """line 1, column 2: '"1"' is a quoted number after a space, and a quote must """
                         """open its field ("1" right after the delimiter, or 1)"""),  # was: not a number (use --header …)
        "spaced quote later": (["spaced2.csv"], """line 2, column 2: '"0"' is a quoted number after a space"""),
        "nan": (["nan.npy"], "invalid numeric entries"),
        "h5 none": (["none.h5"], "no 2-D dataset (a matrix, or a point set) or 3-D one (a stack)"),
        "h5 several": (["two.h5"], "/a, /b"),
        "h5 missing": (["two.h5", "--dataset", "zzz"], "no dataset 'zzz'"),
        "h5 two names": (["two.h5:/a", "--dataset", "b"], "names the dataset /a and --dataset names b"),
        "not NPY": (["text.npy"], "it is not an NPY file"),
        "h5 rank": (["rank.h5", "--dataset", "costs"], "4-D"),
        "h5 dtype": (["text.h5", "--dataset", "costs"], "reads numbers"),
        "h5 broken link": (["links.h5:/soft"], "cannot read links.h5:/soft as HDF5"),
        "h5 external link": (["links.h5", "--dataset", "external"], "cannot read links.h5:external as HDF5"),
        "comments only": (["comments.csv"], "comments.csv holds no numbers"),
        "directory": ([".", ], "is a directory"),
        "dataset of an NPY": (["ok.npy", "--dataset", "costs"], "--dataset costs names a dataset, but ok.npy is not"),
        "dataset of a CSV": (["comments.csv", "--dataset", "x"], "but comments.csv is not HDF5 or NPZ"),
        "bad dtype option": (["ok.npy", "--dtype", "int8"], "int8"),
        "bad solver option": (["ok.npy", "--solver", "magic"], "magic"),
        "bad output extension": (["ok.npy", "-o", "a.xyz"], "unknown assignment extension"),
        "dataset of an NPY output": (["ok.npy", "-o", "a.npy:/x"], "an assignment file takes no dataset after ':'"),
        "dataset of a report": (["ok.npy", "-o", "o.csv", "--report", "r.json:x"],
                                "cannot write r.json:x: a report file takes no dataset after ':'; give r.json"),
        "output folder missing": (["ok.npy", "-o", "nofolder/a.csv"], "does not exist"),
        "output names a folder": (["ok.npy", "-o", "a.csv/"], "it names a folder, not a file"),
        "output names a folder too": (["ok.npy", "-o", "a.csv/."], "it names a folder, not a file"),
        "output under a file": (["ok.npy", "-o", "ok.npy/a.csv"], "ok.npy is a file, not a folder"),
    }


def test_every_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, monkeypatch):
    cases = error_cases(tmp_path)
    monkeypatch.chdir(tmp_path)
    before = set(os.listdir(tmp_path))
    for name, (args, fragment) in cases.items():
        result = invoke("solve", *args, "-o", "out.csv", "--report", "rep.json") if "-o" not in args else invoke("solve", *args)
        assert_one_line_error(result, 2, fragment)
        assert set(os.listdir(tmp_path)) == before, name


def test_a_dataset_named_for_stdin_is_refused_not_ignored(tmp_path):
    result = invoke("solve", "-", "--dataset", "costs", input=b"1,2\n3,4\n")
    assert_one_line_error(result, 2, "--dataset costs names a dataset, but stdin is not HDF5 or NPZ")
    import h5py  # beside an HDF5 file that has the dataset: refused before that file is solved, as a file's is

    with h5py.File(tmp_path / "x.h5", "w") as h5:
        h5["costs"] = np.eye(3)
    result = invoke("solve", tmp_path / "x.h5", "-", "--dataset", "costs", "--json", input=b"1,2\n3,4\n")
    assert_one_line_error(result, 2, "--dataset costs names a dataset, but stdin is not HDF5 or NPZ")
    assert result.stdout == ""


def test_infeasible_is_exit_1(tmp_path):
    cost = np.ones((3, 3))
    cost[1] = np.inf
    np.save(tmp_path / "inf.npy", cost)
    result = invoke("solve", tmp_path / "inf.npy", "-o", tmp_path / "a.csv")
    assert_one_line_error(result, 1, "cost matrix is infeasible")
    assert not (tmp_path / "a.csv").exists()


def test_bad_generate_options_are_exit_2(tmp_path):
    assert invoke("generate", "--n", 0, "-o", tmp_path / "a.npy").exit_code == 2
    assert invoke("generate", "--n", 5, "--range", 0, "-o", tmp_path / "a.npy").exit_code == 2
    result = invoke("generate", "--n", 5, "--m", 6, "--kind", "sanity", "-o", tmp_path / "a.npy")
    assert_one_line_error(result, 2, "square")
    assert not (tmp_path / "a.npy").exists()


@pytest.mark.parametrize("args, fragment", [(["--kind", "float", "--range", "5"], "--kind float does not take one"),
                                            (["--kind", "geometric-int", "--range", "5"], "does not take one"),
                                            (["--d", "3"], "--d is the dimension of point sets")])
def test_generate_options_that_would_change_nothing_are_refused(tmp_path, args, fragment):
    """--range beside a kind without one, and --d without --points, were ignored: the file was not
    what was asked for."""
    assert_one_line_error(invoke("generate", "--n", 3, *args, "-o", tmp_path / "a.npy"), 2, fragment)
    assert not (tmp_path / "a.npy").exists()


def test_duals_naming_the_input_are_refused_and_the_input_kept(tmp_path):
    np.savez(tmp_path / "m.npz", np.eye(3))
    result = invoke("solve", tmp_path / "m.npz", "--duals", tmp_path / "m.npz", "-q")
    assert_one_line_error(result, 2, "would overwrite the input")
    assert np.array_equal(np.load(tmp_path / "m.npz")["arr_0"], np.eye(3))


@pytest.mark.parametrize("dataset", ["", "/", ".", "a/../b", "a//b"])
def test_generate_refuses_a_dataset_name_hdf5_cannot_create(tmp_path, dataset):
    for batch in ([], ["--batch", "2", "--ragged"]):
        result = invoke("generate", "--n", 3, *batch, "--seed", 1, "-o", tmp_path / "g.h5", "--dataset", dataset)
        assert_one_line_error(result, 2, "--dataset must name a dataset or group")
        assert not (tmp_path / "g.h5").exists()
    assert invoke("generate", "--n", 3, "--seed", 1, "-o", tmp_path / "g.h5", "--dataset", "/x/y/", "-q").exit_code == 0
    assert invoke("solve", f"{tmp_path / 'g.h5'}:/x/y", "-q").exit_code == 0


def test_fifo_input_is_refused(tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")
    assert_one_line_error(invoke("solve", tmp_path / "pipe.csv"), 2, "not a regular file")


def test_a_pipe_named_with_an_extension_takes_that_format_or_is_refused_first(tmp_path):
    """A pipe is written in place, in the format its name's extension says: HDF5 (which seeks back)
    and extensions the output has no writer for are refused before any work, as for a file (a pipe
    named .npz took generate's CSV, one named .h5 solve's; generate to a .h5 one failed after the work)."""
    np.save(tmp_path / "m.npy", np.array([[4, 1], [2, 5]]))

    def pipe(name):  # its read end open (non-blocking): a write to it neither blocks nor fails
        os.mkfifo(tmp_path / name)
        return os.open(tmp_path / name, os.O_RDONLY | os.O_NONBLOCK)

    for command, name, words in [(["generate", "--n", 3, "--seed", 1], "g.h5", "it is a pipe, where an HDF5 file"),
                                 (["generate", "--n", 3, "--seed", 1], "g.npz", "unknown matrix extension '.npz'"),
                                 (["solve", tmp_path / "m.npy"], "s.h5", "unknown assignment extension '.h5'")]:
        reader = pipe(name)
        assert_one_line_error(invoke(*command, "-o", tmp_path / name), 2, words)
        assert os.read(reader, 1) == b""  # never opened to write: nothing in it
        os.close(reader)
    reader = pipe("s.npy")
    assert invoke("solve", tmp_path / "m.npy", "-o", tmp_path / "s.npy", "-q").exit_code == 0
    data = os.read(reader, 1 << 16)
    os.close(reader)
    assert np.load(io.BytesIO(data)).tolist() == [1, 0]  # NPY (each row's column), as the name says


def test_truncated_and_oversized_npy_are_refused_before_allocating(tmp_path):
    np.save(tmp_path / "full.npy", np.arange(100, dtype=np.int64).reshape(10, 10))
    data = (tmp_path / "full.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[: len(data) - 40])
    assert_one_line_error(invoke("solve", tmp_path / "cut.npy"), 2, "shorter than its header")
    header = data[: data.index(b"\n") + 1].replace(b"(10, 10)", b"(9999999, 9999999)".ljust(8))
    # keep the header length a multiple of 64 as NPY requires
    prefix_len = data.index(b"{")
    body = header[prefix_len:].rstrip(b"\n").rstrip(b" ")
    total = 64 * ((prefix_len + len(body) + 1 + 63) // 64)
    new_header = data[:8] + (total - prefix_len).to_bytes(2, "little") + body + b" " * (total - prefix_len - len(body) - 1) + b"\n"
    (tmp_path / "huge.npy").write_bytes(new_header + data[len(header):])
    assert_one_line_error(invoke("solve", tmp_path / "huge.npy"), 2, "shorter than its header")


def test_huge_csv_line_is_parsed_or_refused_cleanly(tmp_path):
    (tmp_path / "wide.csv").write_text(",".join(["1"] * 200_000) + "\n")
    result = invoke("solve", tmp_path / "wide.csv", "--json", "--solver", "scipy")
    assert result.exit_code == 0 and json.loads(result.stdout)["n_cols"] == 200_000


def test_a_report_past_float64s_range_is_strict_json(tmp_path):
    """An objective that overflows float64 (two pairs of 1e308) is the string "inf" in the report:
    json.dumps's bare Infinity is no JSON to jq or JavaScript."""
    np.save(tmp_path / "m.npy", np.full((2, 2), 1e308))
    result = invoke("solve", tmp_path / "m.npy", "--json", "--report", tmp_path / "r.json", "-q")
    assert result.exit_code == 0, result.stderr

    def refuse(constant):
        raise ValueError(f"not strict JSON: {constant}")

    for text in (result.stdout, (tmp_path / "r.json").read_text()):
        assert json.loads(text, parse_constant=refuse)["objective"] == "inf"


def test_binary_data_where_text_is_read_is_named_not_parsed(tmp_path):
    """Binary archives or gzip on stdin (stdin takes NPY or text), binary files under a text name:
    one line naming what came, not a parse error quoting its bytes."""
    np.savez(tmp_path / "m.npz", np.eye(3))
    with h5py.File(tmp_path / "m.h5", "w") as handle:
        handle["costs"] = np.eye(3)
    for name, kind in (("m.npz", "NPZ"), ("m.h5", "HDF5")):
        result = CliRunner().invoke(cli, ["solve", "-"], input=(tmp_path / name).read_bytes())
        assert_one_line_error(result, 2, f"stdin holds an {kind}")
    # gzip on stdin, and binary files under a text name: named too, not their bytes quoted
    csv = b"4,1\n2,0\n"
    result = CliRunner().invoke(cli, ["solve", "-"], input=gzip.compress(csv))
    assert_one_line_error(result, 2, "stdin holds gzip-compressed data; decompress it first")
    (tmp_path / "z.csv").write_bytes(gzip.compress(csv))
    assert_one_line_error(invoke("solve", tmp_path / "z.csv"), 2, "z.csv holds gzip-compressed data; decompress it")
    np.save(tmp_path / "m.npy", np.eye(3))
    (tmp_path / "n.txt").write_bytes((tmp_path / "m.npy").read_bytes())
    assert_one_line_error(invoke("solve", tmp_path / "n.txt"), 2, "n.txt holds an NPY array; .txt is read as text")
    for encoding in ("utf-16", "utf-16-be"):  # Windows' editors and PowerShell: its BOM, not "'\x003\x00' is no number"
        text = ("\ufeff" if encoding.endswith("be") else "") + "4,1\n2,0\n"
        (tmp_path / "w.csv").write_text(text, encoding=encoding)
        for args in ([tmp_path / "w.csv"], ["--points", tmp_path / "w.csv", tmp_path / "w.csv"]):
            assert_one_line_error(invoke("solve", *args), 2, "w.csv holds UTF-16 text (its byte-order mark); lapcli reads UTF-8")
        result = CliRunner().invoke(cli, ["solve", "-"], input=(tmp_path / "w.csv").read_bytes())
        assert_one_line_error(result, 2, "stdin holds UTF-16 text")
    (tmp_path / "ok.csv").write_bytes(csv)  # after another input: named before that one is solved
    for name, kind in (("n.txt", "an NPY array"), ("z.csv", "gzip-compressed data")):
        result = invoke("solve", tmp_path / "ok.csv", tmp_path / name, "--json")
        assert_one_line_error(result, 2, f"{name} holds {kind}")
        assert result.stdout == ""


def test_an_npy_of_strings_on_stdin_is_named_by_its_dtype(tmp_path):
    np.save(tmp_path / "s.npy", np.array([["a", "b"], ["c", "d"]]))
    result = CliRunner().invoke(cli, ["solve", "-"], input=(tmp_path / "s.npy").read_bytes())
    assert_one_line_error(result, 2, "stdin has dtype <U1; lapcli reads numbers")


def test_a_bare_lap_prints_its_help_not_an_error():
    """No command: the usage and the commands on stderr, exit 2, with no "Error:" in front of the
    help (it once came as one 14-line error)."""
    result = CliRunner().invoke(cli, [], prog_name="lap")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("Usage: lap") and "Commands:" in result.stderr and "Error" not in result.stderr


def test_json_and_stdout_assignment_conflict_is_one_line():
    assert_one_line_error(invoke("solve", "x.npy", "--json", "-o", "-"), 2, "both write to stdout")


@pytest.mark.parametrize("args, fragment", [
    (["-o", "same.json", "--report", "same.json"], "-o and --report both write to same.json"),
    (["-o", "same.npz", "--duals", "same.npz"], "-o and --duals both write to same.npz"),
    (["--report", "same.json", "--duals", "./same.json"], "--report and --duals both write to same.json"),
    (["-o", "-", "--report", "-"], "-o and --report both write to stdout"),
    (["--points", "a.npy", "b.npy", "-o", "same.json", "--report", "same.json"], "-o and --report both write to"),
    (["-o", "./m.npy"], "-o ./m.npy would overwrite the input m.npy"),
    (["--points", "a.npy", "b.npy", "-o", "b.npy"], "-o b.npy would overwrite the input b.npy"),
])
def test_two_outputs_naming_one_file_are_refused_before_solving(tmp_path, monkeypatch, args, fragment):
    monkeypatch.chdir(tmp_path)
    for name in ("m.npy", "a.npy", "b.npy"):
        np.save(name, np.eye(3))
    result = invoke("solve", *([] if "--points" in args else ["m.npy"]), *args, "-q")
    assert_one_line_error(result, 2, fragment)
    assert result.stdout == "" and sorted(os.listdir(tmp_path)) == ["a.npy", "b.npy", "m.npy"]
    assert all(np.array_equal(np.load(name), np.eye(3)) for name in ("m.npy", "a.npy", "b.npy"))  # inputs intact
    assert invoke("solve", "m.npy", "-o", os.devnull, "--report", os.devnull, "-q").exit_code == 0  # a device takes both


@pytest.mark.parametrize("args", [
    ["generate", "--n", "5", "--range", "nan"],
    ["generate", "--n", "5", "--range", "inf"],
    ["solve", "m.npy", "--timeout", "nan"],
    ["solve", "m.npy", "--timeout", "inf"],
])
def test_float_options_refuse_nan_and_inf(tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "m.npy", np.eye(3))
    result = invoke(*args, "-o", "out.npy" if args[0] == "generate" else "out.csv")
    assert_one_line_error(result, 2, "is not a finite number")
    assert sorted(os.listdir(tmp_path)) == ["m.npy"]


# ----------------------------------------------------------------------------- real processes
def test_pipeline_generate_into_solve_as_subprocesses():
    generate = subprocess.Popen(LAP + ["generate", "--n", "64", "--range", "10", "--seed", "9"], stdout=subprocess.PIPE)
    solve = subprocess.run(LAP + ["solve", "-", "--json", "--quiet"], stdin=generate.stdout, capture_output=True, check=True)
    generate.stdout.close()
    assert generate.wait() == 0
    from lapcli.generate import generate as make

    cost = make(64, range_factor=10, seed=9)
    assert json.loads(solve.stdout)["objective"] == scipy_objective(cost)
    assert solve.stderr == b""


STDOUT_COMMANDS = {  # every command that writes data on stdout
    "solve -o -": ["solve", "m.npy", "-o", "-", "-q"],
    "solve a stack -o -": ["solve", "s.npy", "-o", "-", "-q"],
    "solve --json": ["solve", "m.npy", "--json", "-q"],
    "generate": ["generate", "--n", "300", "--seed", "1", "-q"],
    "generate --points": ["generate", "--points", "--n", "300", "--seed", "1"],
    "info --json": ["info", "--json"],
}


def run_lap_into(stdout, args, cwd):
    """`lap ARGS` in a process whose stdout is ``stdout`` (a file descriptor); its exit code and stderr."""
    np.save(cwd / "m.npy", np.arange(16).reshape(4, 4))
    np.save(cwd / "s.npy", np.arange(48).reshape(3, 4, 4))
    process = subprocess.run(LAP + args, cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, timeout=120)
    return process.returncode, process.stderr.decode()


@pytest.mark.parametrize("command", STDOUT_COMMANDS)
def test_a_closed_stdout_exits_1_without_a_word(tmp_path, command):
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader went away before the first byte, as `| head -c 0`
    try:
        code, err = run_lap_into(write_end, STDOUT_COMMANDS[command], tmp_path)
    finally:
        os.close(write_end)
    assert (code, err) == (1, "")


@pytest.mark.parametrize("args", [["solve", "s.npy", "-o", "-"], ["generate", "--n", "400", "--seed", "1", "-q"]])
def test_a_reader_that_leaves_early_ends_the_run_with_exit_1(tmp_path, args):
    """`lap solve stack.npy -o - | head`: an answer larger than the pipe (64 KiB) took one write,
    which returned the bytes the pipe held without an error, and the run ended 0 with its summary
    printed as if the answer were out."""
    np.save(tmp_path / "s.npy", np.random.default_rng(1).integers(0, 100, (300, 64, 64)))
    process = subprocess.Popen(LAP + args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.read(100)
    process.stdout.close()
    assert (process.wait(timeout=120), process.stderr.read()) == (1, b"")


@pytest.mark.parametrize("unbuffered", [False, True])
def test_a_non_blocking_stdout_gets_the_whole_answer(tmp_path, unbuffered):
    """A pipe set O_NONBLOCK by its reader, read late: a raw stdout (PYTHONUNBUFFERED) returned None
    for a write that would block, taken as all written (exit 0, 64 KiB of the answer); a buffered
    one raised BlockingIOError, and its buffer failed again at exit (exit 120)."""
    import fcntl

    np.save(tmp_path / "s.npy", np.random.default_rng(1).integers(0, 100, (300, 64, 64)))
    expected = subprocess.run(LAP + ["solve", "s.npy", "-o", "-", "-q"], cwd=tmp_path, capture_output=True).stdout
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETFL, fcntl.fcntl(write_end, fcntl.F_GETFL) | os.O_NONBLOCK)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    env |= {"PYTHONUNBUFFERED": "1"} if unbuffered else {}
    process = subprocess.Popen(LAP + ["solve", "s.npy", "-o", "-", "-q"], cwd=tmp_path, stdout=write_end,
                               stderr=subprocess.PIPE, env=env)
    os.close(write_end)
    time.sleep(1.0)  # the pipe (64 KiB) fills, and the writer meets EAGAIN
    received = b"".join(iter(lambda: os.read(read_end, 1 << 20), b""))
    os.close(read_end)
    assert (process.wait(timeout=60), process.stderr.read()) == (0, b"")
    assert len(expected) > 1 << 16 and received == expected


@pytest.mark.parametrize("command", [*STDOUT_COMMANDS, "info (a table)"])
def test_a_stdout_closed_before_the_start_exits_1_without_a_word(tmp_path, command):
    """Descriptor 1 closed (``>&-``): Python leaves sys.stdout None, and each command failed on it
    (a traceback, or "internal error")."""
    np.save(tmp_path / "m.npy", np.arange(16).reshape(4, 4))
    np.save(tmp_path / "s.npy", np.arange(48).reshape(3, 4, 4))
    args = STDOUT_COMMANDS.get(command, ["info"])  # the table: Rich's own broken-pipe handling
    process = subprocess.run(LAP + args, cwd=tmp_path, stderr=subprocess.PIPE, timeout=120,
                             preexec_fn=lambda: os.close(1))
    assert (process.returncode, process.stderr.decode()) == (1, "")


def test_a_stdin_closed_before_the_start_is_bad_input(tmp_path):
    process = subprocess.run(LAP + ["solve", "-"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             timeout=120, preexec_fn=lambda: os.close(0))
    assert process.returncode == 2 and process.stdout == b""
    assert process.stderr.decode() == "Error: stdin is closed: nothing to read from '-'\n"


@pytest.mark.parametrize("args, code, stdout", [(["solve", "missing.npy"], 2, b""), (["solve", "--bogus"], 2, b""),
                                                (["solve", "m.npy", "-o", "-"], 0, b"row,col\n0,0\n1,1\n")])
def test_a_stderr_closed_before_the_start_keeps_messages_off_stdout(tmp_path, args, code, stdout):
    """Descriptor 2 closed (``2>&-``): Click printed its errors on stdout, among the data."""
    np.save(tmp_path / "m.npy", np.array([[0, 5], [5, 0]]))
    process = subprocess.run(LAP + args, cwd=tmp_path, stdout=subprocess.PIPE, timeout=120,
                             preexec_fn=lambda: os.close(2))
    assert (process.returncode, process.stdout) == (code, stdout)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args, code, written", [(["solve", "m.npy", "-o", "a.csv"], 0, True),
                                                 (["solve", "word.csv", "-o", "a.csv"], 2, False)])
def test_an_unwritable_stderr_keeps_the_run_s_exit_code(tmp_path, args, code, written):
    """``2>/dev/full``: the summary after the outputs, or bad input's one line, could not be written,
    and the run exited 1 (a traceback nobody saw): the messages are dropped, the exit code is the run's."""
    np.save(tmp_path / "m.npy", np.array([[0, 5], [5, 0]]))
    (tmp_path / "word.csv").write_text("a b\nx y\n")
    with open("/dev/full", "w") as full:
        process = subprocess.run(LAP + args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=full, timeout=120)
    assert process.returncode == code and (tmp_path / "a.csv").exists() == written
    assert process.stdout == b""


@pytest.mark.parametrize("args", [["solve", "m.npy", "--report", "-", "--json"], ["solve", "m.npy", "--duals", "-", "--json"],
                                  ["solve", "--points", "a.npy", "b.npy", "--report", "-", "--json"],
                                  ["bench", "--sizes", "8", "--solvers", "scipy", "--json", "-", "--csv", "-"]])
def test_two_documents_on_stdout_are_refused_before_any_work(tmp_path, monkeypatch, args):
    """--json prints the report on stdout: another output there made two documents, one after the other."""
    monkeypatch.chdir(tmp_path)
    np.save(tmp_path / "m.npy", np.arange(16).reshape(4, 4))
    np.save(tmp_path / "a.npy", np.arange(8.0).reshape(4, 2))
    np.save(tmp_path / "b.npy", np.arange(8.0).reshape(4, 2) + 0.5)
    result = invoke(*args)
    assert_one_line_error(result, 2, "both write to stdout")
    assert result.stdout == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["--help"], ["solve", "-h"], ["--version"]])
def test_help_and_version_on_a_full_disk_are_one_line_exit_1(tmp_path, args):
    """Click writes them in its eager callbacks, outside lapcli's write checks: once a traceback."""
    with open("/dev/full", "w") as full:
        process = subprocess.run(LAP + args, cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, timeout=120)
    assert (process.returncode, process.stderr.decode()) == (1, "Error: cannot write stdout: No space left on device\n")


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
@pytest.mark.parametrize("flag", ["-o", "--duals", "--report"])
def test_a_path_to_stdout_beside_json_is_two_documents_too(tmp_path, flag):
    """-o /dev/stdout --json: /dev/stdout is where descriptor 1 goes (here a pipe), so the answer and
    the report went there one after the other, exit 0; /dev/null still takes any number of outputs."""
    np.save(tmp_path / "m.npy", np.arange(16).reshape(4, 4))
    run = lambda target: subprocess.run(LAP + ["solve", "m.npy", flag, target, "--json", "-q"], cwd=tmp_path,  # noqa: E731
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    refused = run("/dev/stdout")
    assert (refused.returncode, refused.stdout) == (2, b"") and b"both write to /dev/stdout" in refused.stderr
    assert run("/dev/null").returncode == 0
    merged = subprocess.run(LAP + ["solve", "m.npy", flag, "/dev/stderr", "--json", "-q"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
    assert merged.returncode == 0  # stderr named for what it is, though 2>&1 merged it with stdout


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
@pytest.mark.parametrize("command", [["solve", "m.npy", "-o", "/dev/stdout", "--report", "/dev/fd/1"],
                                     ["solve", "m.npy", "--duals", "/dev/stdout", "--report", "/dev/stdout"],
                                     ["bench", "--sizes", "4", "--solvers", "scipy", "--repeat", "1",
                                      "--json", "/dev/stdout", "--csv", "/dev/stdout"]])
def test_two_paths_to_a_stdout_pipe_are_refused_as_one_output(tmp_path, command):
    """Two outputs each naming stdout, a pipe: both documents went down it one after the other, exit 0
    (refused only where stdout was a file, or one of them was '-')."""
    np.save(tmp_path / "m.npy", np.arange(16).reshape(4, 4))
    done = subprocess.run(LAP + [*command, "-q"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=120)
    assert (done.returncode, done.stdout) == (2, b"") and b"both write to /dev/" in done.stderr
    quiet = subprocess.run(LAP + [*command, "-q"], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           timeout=120)
    assert quiet.returncode == 0, quiet.stderr  # stdout is /dev/null, which takes both


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [*STDOUT_COMMANDS, "info (a table)", "solve -o /dev/full", "bench --json /dev/full"])
def test_a_full_disk_under_stdout_or_an_output_is_one_line_exit_1(tmp_path, command):
    args = {**STDOUT_COMMANDS, "info (a table)": ["info"], "solve -o /dev/full": ["solve", "m.npy", "-o", "/dev/full", "-q"],
            "bench --json /dev/full": ["bench", "--solvers", "scipy", "--sizes", "8", "--repeat", "1", "--json",
                                       "/dev/full", "-q"]}[command]
    with open("/dev/full", "wb") as full:
        code, err = run_lap_into(full.fileno(), args, tmp_path)
    name = "/dev/full" if "/dev/full" in args else "stdout"
    assert (code, err) == (1, f"Error: cannot write {name}: No space left on device\n")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("args", [["-o", "old.csv", "--json", "-q"], ["-o", "old.csv", "--report", "/dev/full"],
                                  ["-o", "new.csv", "--duals", "d.json", "--json", "-q"]])
def test_a_stdout_or_device_that_cannot_be_written_leaves_the_files_as_they_were(tmp_path, args):
    """The files are renamed into place only once stdout and devices took their part: a failed
    command replaces no file and leaves none."""
    (tmp_path / "old.csv").write_text("OLD\n")
    with open("/dev/full", "wb") as full:
        code, err = run_lap_into(full.fileno(), ["solve", "m.npy", *args], tmp_path)
    assert code == 1 and err.startswith("Error: cannot write") and err.count("\n") == 1
    assert (tmp_path / "old.csv").read_text() == "OLD\n"
    assert sorted(os.listdir(tmp_path)) == ["m.npy", "old.csv", "s.npy"]


def test_bench_plot_without_matplotlib_is_bad_input_before_any_solve(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # its import raises ImportError
    result = invoke("bench", "--solvers", "scipy", "--sizes", "8", "--repeat", "1", "--plot", tmp_path / "p.png")
    assert_one_line_error(result, 2, "--plot needs matplotlib")
    assert os.listdir(tmp_path) == []


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_bench_writes_all_of_its_files_or_none(tmp_path):
    code, err = run_lap_into(None, ["bench", "--solvers", "scipy", "--sizes", "8", "--repeat", "1", "--warmup", "0",
                                    "-q", "--json", "b.json", "--csv", "/dev/full"], tmp_path)
    assert (code, err) == (1, "Error: cannot write /dev/full: No space left on device\n")
    assert sorted(os.listdir(tmp_path)) == ["m.npy", "s.npy"]


def test_an_output_the_disk_cannot_hold_is_one_line_exit_1_and_leaves_no_file(tmp_path, monkeypatch):
    import errno

    import lapcli.io.write

    def quota_exceeded(fd):  # NFS and quotas report a full disk when the data is flushed
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    np.save(tmp_path / "m.npy", np.eye(3))
    monkeypatch.setattr(lapcli.io.write.os, "fsync", quota_exceeded)
    for args in (["solve", "m.npy", "-q", "-o", "a.csv"], ["solve", "m.npy", "-q", "--report", "r.json"],
                 ["generate", "--n", "5", "--seed", "1", "-o", "g.h5"]):
        result = invoke(*[tmp_path / a if "." in a else a for a in args])
        assert_one_line_error(result, 1, f"cannot write {tmp_path / args[-1]}: {os.strerror(errno.EDQUOT)}")
        assert os.listdir(tmp_path) == ["m.npy"]


def test_a_folder_that_refuses_files_is_refused_before_the_work_or_exit_1_after_it(tmp_path, monkeypatch):
    """access() says yes to root anywhere (/proc, a read-only mount): the output was refused only
    after the solve, as bad input (exit 2), and `lap bench`'s files with a traceback. The folder is
    tried with a file of its own before the work; one that goes after it is an output error (exit 1)."""
    import errno
    import tempfile

    import lapcli.io.write

    np.save(tmp_path / "m.npy", np.eye(3))
    made = tempfile.mkstemp

    def read_only(*args, dir=None, **kwargs):
        if dir is not None and str(dir) == str(tmp_path / "ro"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return made(*args, dir=dir, **kwargs)

    (tmp_path / "ro").mkdir()
    monkeypatch.setattr(tempfile, "mkstemp", read_only)
    for args in (["solve", tmp_path / "m.npy", "-o", tmp_path / "ro" / "a.csv"],
                 ["bench", "--sizes", "8", "--solvers", "scipy", "--json", tmp_path / "ro" / "b.json"]):
        assert_one_line_error(invoke(*args), 2, f"cannot write {tmp_path / 'ro' / args[-1].name}: "
                                                f"{os.strerror(errno.EROFS)}")

    def full(*args, **kwargs):  # a full disk before the work is no bad input either
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "mkstemp", full)
    assert_one_line_error(invoke("solve", tmp_path / "m.npy", "-o", tmp_path / "a.csv"), 1,
                          f"cannot write {tmp_path / 'a.csv'}: {os.strerror(errno.ENOSPC)}")
    monkeypatch.undo()

    def gone(*args, **kwargs):  # the folder went between the check and the write
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))

    monkeypatch.setattr(lapcli.io.write, "new_temporary", gone)  # the writer's, not the check's
    for args in (["solve", tmp_path / "m.npy", "-q", "-o", tmp_path / "a.csv"],
                 ["bench", "--sizes", "8", "--solvers", "scipy", "-q", "--json", tmp_path / "b.json"]):
        assert_one_line_error(invoke(*args), 1, f"cannot write {args[-1]}: {os.strerror(errno.ENOENT)}")
    assert sorted(os.listdir(tmp_path)) == ["m.npy", "ro"]


def test_an_output_name_near_the_file_system_s_limit_is_written(tmp_path):
    """The temporary name beside it (".NAME.XXXXXXXX.part") passed 255 bytes: a valid 250-byte name was
    "File name too long"."""
    np.save(tmp_path / "m.npy", np.eye(3))
    for name in ("x" * 246 + ".npy", "é" * 123 + ".csv"):
        assert invoke("solve", tmp_path / "m.npy", "-q", "-o", tmp_path / name).exit_code == 0
    assert sorted(os.listdir(tmp_path)) == sorted(["m.npy", "x" * 246 + ".npy", "é" * 123 + ".csv"])
    too_long = tmp_path / ("y" * 300 + ".csv")  # past the limit: one line naming it, not "internal error"
    assert_one_line_error(invoke("solve", tmp_path / "m.npy", "-o", too_long), 2, f"cannot write {too_long}: "
                                                                                   "File name too long")


@pytest.mark.parametrize("args", [
    ["solve", "m.npy", "-o", "a.npy", "--duals", "d.json"],
    ["solve", "m.npy", "-o", "a.npy", "--duals", "d.json", "--report", "r.json"],
    ["solve", "s.npy", "-o", "a.npy", "--report", "r.json"],
    ["solve", "--points", "m.npy", "p.npy", "-o", "a.npy", "--report", "r.json"],
])
def test_a_later_output_the_disk_cannot_hold_leaves_every_output_as_it_was(tmp_path, monkeypatch, args):
    """The assignment written, then its duals or report refused by the disk: the assignment stayed,
    and the summary had said the solve succeeded. Now no file is written, the file that was at -o
    before is left as it was, and stderr is the one line."""
    import errno

    import lapcli.io.write

    written = lapcli.io.write.os.fsync
    last = args[-1]

    def full_at_the_last(fd):  # the run's last file is the one the disk cannot hold
        if os.readlink(f"/proc/self/fd/{fd}").split("/")[-1].startswith(f".{last}"):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written(fd)

    np.save(tmp_path / "m.npy", np.eye(3))
    np.save(tmp_path / "p.npy", np.ones((3, 3)))
    np.save(tmp_path / "s.npy", np.ones((2, 3, 3)))
    (tmp_path / "a.npy").write_bytes(b"an earlier answer")
    monkeypatch.setattr(lapcli.io.write.os, "fsync", full_at_the_last)
    result = invoke(*[tmp_path / a if "." in a else a for a in args])
    assert_one_line_error(result, 1, f"cannot write {tmp_path / last}: {os.strerror(errno.ENOSPC)}")
    assert sorted(os.listdir(tmp_path)) == ["a.npy", "m.npy", "p.npy", "s.npy"]
    assert (tmp_path / "a.npy").read_bytes() == b"an earlier answer"


def catches(pid: int, sig: int) -> bool:
    """Whether process ``pid`` has a handler for ``sig`` (Linux: /proc's SigCgt mask; elsewhere
    assumed)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            caught = next(line for line in status if line.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return True
    return bool(int(caught.split()[1], 16) >> (sig - 1) & 1)


def interrupt(args, cwd, after, sig=signal.SIGINT):
    """Run ``lap args``, send ``sig`` ``after`` seconds in (and not before the process handles it:
    on a loaded 2-core machine its imports have taken longer than 1.5 s), return (code, stderr)."""
    began = time.monotonic()
    process = subprocess.Popen(LAP + args, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while not catches(process.pid, sig) and process.poll() is None and time.monotonic() - began < 60:
        time.sleep(0.01)
    time.sleep(max(0.0, after - (time.monotonic() - began)))
    process.send_signal(sig)
    out, err = process.communicate(timeout=60)
    return process.returncode, err.decode()


@pytest.mark.parametrize("sig, code, message", [(signal.SIGINT, 130, "lap: interrupted"),
                                                (signal.SIGTERM, 143, "lap: terminated")])
@pytest.mark.parametrize("command", ["solve", "generate", "bench"])
def test_ctrl_c_and_sigterm_exit_with_one_line_and_no_partial_file(tmp_path, command, sig, code, message):
    from lapcli.generate import generate as make

    np.save(tmp_path / "big.npy", make(2500, seed=1, kind="geometric"))  # ~3 s on the NumPy solver
    args = {
        "solve": ["solve", "big.npy", "--solver", "numpy", "-o", "out.csv", "--report", "r.json"],
        "generate": ["generate", "--n", "12000", "--kind", "geometric", "--seed", "1", "-o", "out.npy"],  # ~4 s
        "bench": ["bench", "--solvers", "numpy", "--sizes", "2500", "--kind", "geometric", "--json", "out.json"],  # ~20 s
    }[command]
    before = set(os.listdir(tmp_path))
    returncode, err = interrupt(args, tmp_path, after=1.5, sig=sig)
    assert returncode == code, err
    assert err.strip().splitlines() == [message] or err.strip().endswith(message)
    assert not err.endswith(f"\n\n{message}\n") and err != f"\n{message}\n"  # no blank line first (Click's)
    assert "Traceback" not in err
    assert set(os.listdir(tmp_path)) == before


@pytest.mark.parametrize("where", ["start_early", "import"])
def test_ctrl_c_before_the_command_line_runs_is_one_line_and_exit_130(monkeypatch, capsys, where):
    from lapcli import entry
    from lapcli.cli import gpu_start

    def interrupted(*args):
        raise KeyboardInterrupt

    if where == "start_early":
        monkeypatch.setattr(gpu_start, "start_early", interrupted)
    else:  # the command line's module imported at the moment of the Ctrl-C
        monkeypatch.setattr(gpu_start, "start_early", lambda argv: None)
        monkeypatch.setattr("builtins.__import__", _interrupting_import(__import__, "main"))
    with pytest.raises(SystemExit) as exit_:
        entry.main()
    assert exit_.value.code == 130
    assert capsys.readouterr().err == "lap: interrupted\n"


def _interrupting_import(real, module):
    """``__import__`` that raises KeyboardInterrupt for ``from .cli.main import ...`` (the module
    named ``module`` relative to lapcli.cli), as a Ctrl-C landing in that import would."""
    def importer(name, globals=None, locals=None, fromlist=(), level=0):
        if name == f"cli.{module}" and level == 1:
            raise KeyboardInterrupt
        return real(name, globals, locals, fromlist, level)
    return importer


SIGTERM_MID_WRITE = """
import os, signal, sys
import lapcli.cli.main
from lapcli.cli.main import main

real_blocks = lapcli.cli.main.generate_blocks

def first_block_then_sigterm(*args, **kwargs):
    blocks = real_blocks(*args, **kwargs)
    yield next(blocks)  # 1024 rows, written to the .part file before the next block is asked for
    parts = [name for name in os.listdir() if name.endswith(".part")]
    assert len(parts) == 1 and os.path.getsize(parts[0]) > 1_000_000, parts  # really mid-write
    os.kill(os.getpid(), signal.SIGTERM)
    for _ in range(1000):  # the handler runs at the next bytecode; nothing below is reached
        pass
    raise AssertionError("SIGTERM was not delivered")

lapcli.cli.main.generate_blocks = first_block_then_sigterm  # this process only
main(sys.argv[1:])
"""


@pytest.mark.parametrize("name", ["out.npy", "out.csv", "out.h5"])
def test_sigterm_in_the_middle_of_a_write_leaves_no_file_and_no_part_file(tmp_path, name):
    process = subprocess.run([sys.executable, "-c", SIGTERM_MID_WRITE, "generate", "--n", "2000", "--m", "300",
                              "--seed", "1", "-o", name], cwd=tmp_path, capture_output=True, timeout=60)
    assert process.returncode == 143, process.stderr
    assert process.stderr.decode().strip().splitlines() == ["lap: terminated"]
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640)])
def test_written_files_get_the_mode_the_umask_gives(tmp_path, umask, mode):
    np.save(tmp_path / "m.npy", np.eye(3, dtype=np.int64))
    previous = os.umask(umask)
    try:
        assert invoke("generate", "--n", 4, "--seed", 1, "-o", tmp_path / "g.npy").exit_code == 0
        assert invoke("generate", "--n", 4, "--seed", 1, "-o", tmp_path / "g.h5").exit_code == 0
        result = invoke("solve", tmp_path / "m.npy", "-o", tmp_path / "a.csv", "--report", tmp_path / "r.json", "-q")
        assert result.exit_code == 0, result.output
    finally:
        os.umask(previous)
    for name in ("g.npy", "g.h5", "a.csv", "r.json"):
        assert oct(os.stat(tmp_path / name).st_mode & 0o777) == oct(mode), name


def test_data_is_on_disk_before_the_rename(tmp_path, monkeypatch):
    import lapcli.io.write

    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(lapcli.io.write.os, "fsync", lambda fd: calls.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(lapcli.io.write.os, "replace", lambda a, b: calls.append("replace") or real_replace(a, b))
    lapcli.io.write.write_bytes(str(tmp_path / "a.json"), b"{}")
    assert calls == ["fsync", "replace"] and (tmp_path / "a.json").read_bytes() == b"{}"


def test_large_csv_is_refused_when_memory_would_not_hold_it(tmp_path, monkeypatch):
    from lapcli.io import text

    (tmp_path / "m.csv").write_text("1,2,3\n4,5,6\n")
    (tmp_path / "meminfo").write_text("MemFree: 0 kB\nMemAvailable: 0 kB\n")
    monkeypatch.setattr(text, "MEMINFO", str(tmp_path / "meminfo"))
    assert_one_line_error(invoke("solve", tmp_path / "m.csv"), 2, "GiB are available")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_output_folder_is_exit_2(tmp_path):
    np.save(tmp_path / "m.npy", np.eye(3))
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    assert_one_line_error(invoke("solve", tmp_path / "m.npy", "-o", locked / "a.csv"), 2, "not writable")


def test_quiet_one_shot_solve_imports_neither_rich_nor_cupy(tmp_path, rng):
    """Start-up is part of a one-shot solve: --quiet prints nothing, so Rich (~40 ms
    on the H100 machine) is not imported; nor is CuPy (~0.25 s; cuda_status asks the driver)."""
    import json
    import subprocess
    import sys

    matrix = tmp_path / "m.npy"
    np.save(matrix, rng.integers(0, 100, (50, 50)).astype(np.int32))
    script = ("import sys, json; from lapcli.cli.main import main\n"
              "try:\n    main(['solve', sys.argv[1], '-o', sys.argv[2], '--quiet'])\nexcept SystemExit:\n    pass\n"
              "print(json.dumps(sorted(m for m in ('rich', 'cupy', 'scipy.optimize') if m in sys.modules)))")
    result = subprocess.run([sys.executable, "-c", script, str(matrix), str(tmp_path / "a.npy")],
                            capture_output=True, text=True, check=True)
    imported = json.loads(result.stdout.strip().splitlines()[-1])
    assert "rich" not in imported and "cupy" not in imported, imported
    assert np.load(tmp_path / "a.npy").shape == (50,)


def test_the_cli_reference_is_the_cli_s_own_help():
    """docs/cli.md's --help blocks are what the CLI prints now (benchmarks/cli_docs.py rewrites them)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "cli_docs.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_an_upper_case_hdf5_or_npz_name_takes_a_dataset_too(tmp_path):
    """FILE.H5:/x was looked for as a file of that whole name ("no such file")."""
    import h5py

    cost = np.array([[4, 1], [2, 0]])
    with h5py.File(tmp_path / "M.H5", "w") as h5:
        h5.create_dataset("g/x", data=cost)
    with open(tmp_path / "S.NPZ", "wb") as handle:  # np.savez would add ".npz" to the name
        np.savez(handle, first=cost)
    for spec in (f"{tmp_path / 'M.H5'}:/g/x", f"{tmp_path / 'S.NPZ'}:first"):
        result = invoke("solve", spec, "--json", "-q")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["objective"] == scipy_objective(cost)


def test_an_unbounded_number_option_says_finite_in_the_help():
    assert "[finite]" in invoke("solve", "--help").stdout and "None]" not in invoke("solve", "--help").stdout


def test_a_dataset_is_split_off_whatever_the_name_holds():
    from lapcli.io.formats import split_hdf5_path

    assert split_hdf5_path("İstanbul.h5:/costs") == ("İstanbul.h5", "/costs")  # 'İ' lowers to two characters
    assert split_hdf5_path("M.HDF5:/g/x") == ("M.HDF5", "/g/x") and split_hdf5_path("a.npz:m") == ("a.npz", "m")
    assert split_hdf5_path("d.h5:/x/b.h5:/y") == ("d.h5", "/x/b.h5:/y") and split_hdf5_path("a.h5") == ("a.h5", None)


@pytest.mark.parametrize("args", [["--n", "10", "-o", "x.npy"], ["--n", "10", "--points", "-o", "x.csv"],
                                  ["--n", "4", "--batch", "3", "--ragged", "-o", "x.npz"], ["--n", "10"]])
def test_generate_refuses_a_dataset_its_output_has_no_place_for(tmp_path, monkeypatch, args):
    """--dataset was ignored where the output is not HDF5, though solve refuses the same."""
    monkeypatch.chdir(tmp_path)
    result = invoke("generate", *args, "--dataset", "foo")
    assert_one_line_error(result, 2, "--dataset foo names an HDF5 dataset")
    assert os.listdir(tmp_path) == []
    assert invoke("generate", "--n", "10", "--dataset", "foo", "-o", "x.h5", "--quiet").exit_code == 0


def test_generate_writes_to_an_hdf5_path_as_solve_reads_one(tmp_path, monkeypatch):
    """`-o FILE.h5:/path` (lap solve's form) was an unknown extension '(none)', and `FILE.h5:` '.h5:';
    the two ways of naming the dataset must agree."""
    monkeypatch.chdir(tmp_path)
    assert invoke("generate", "--n", "6", "--seed", "3", "-o", "m.h5:/grp/costs", "--quiet").exit_code == 0
    assert invoke("generate", "--points", "--n", "6", "--seed", "4", "-o", "p.h5:/pts", "--quiet").exit_code == 0
    import h5py

    with h5py.File("m.h5") as m, h5py.File("p.h5") as p:
        assert m["grp/costs"].shape == (6, 6) and p["pts"].shape == (6, 2)
    assert invoke("solve", "m.h5:/grp/costs", "--quiet").exit_code == 0
    # FILE.h5: names no dataset, as solve reads it: the default, or --dataset's (an unknown extension '.h5:')
    assert invoke("generate", "--n", "5", "-o", "e.h5:", "--quiet").exit_code == 0
    assert invoke("generate", "--points", "--n", "5", "-o", "q.h5:", "--dataset", "z", "--quiet").exit_code == 0
    with h5py.File("e.h5") as e, h5py.File("q.h5") as q:
        assert list(e) == ["costs"] and list(q) == ["z"] and q["z"].shape == (5, 2)
    assert invoke("solve", "e.h5:", "--quiet").exit_code == 0
    assert_one_line_error(invoke("generate", "--n", "6", "-o", "x.h5:/a", "--dataset", "b"), 2, "give one")
    assert_one_line_error(invoke("generate", "--n", "6", "-o", "x.h5:/"), 2, "-o x.h5:/ must name a dataset")
    assert not os.path.exists("x.h5")


def test_a_stream_that_does_not_count_its_writes_is_written_once():
    """write_all takes None from a raw stream as "would block, nothing written" and waits; from any
    other stream None is a write that does not count, taken as all written (it looped for ever)."""
    from lapcli.io.write import write_all

    class Uncounted:
        def __init__(self):
            self.parts = []

        def write(self, data):
            self.parts.append(bytes(data))

    stream = Uncounted()
    write_all(stream, b"x" * 100_000)
    assert stream.parts == [b"x" * 100_000]


def test_a_sigterm_during_the_imports_says_terminated_and_exits_143():
    """SIGTERM in the first ~0.15 s (the imports, before cli_main's handler) killed the process
    without a word (-15 to the shell); Ctrl-C there already said "lap: interrupted", 130."""
    code = ("import os, signal, sys\n"
            "from lapcli.cli import gpu_start\n"
            "gpu_start.start_early = lambda argv: os.kill(os.getpid(), signal.SIGTERM)\n"
            "sys.argv = ['lap', 'info']\n"
            "from lapcli.entry import main\n"
            "main()\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr, done.stdout) == (143, "lap: terminated\n", "")


def test_the_summary_of_an_empty_problem_says_nothing_was_solved(tmp_path):
    """The numpy engine runs the six steps; on a 0 × 3 matrix none ran, and the summary said the
    engine "does not run the six Hungarian steps"."""
    np.save(tmp_path / "e.npy", np.zeros((0, 3)))
    for solver in ("numpy", "scipy"):
        result = invoke("solve", tmp_path / "e.npy", "--solver", solver)
        assert result.exit_code == 0 and "nothing to solve: no step table" in result.stderr
        assert "does not run the six Hungarian steps" not in result.stderr
    np.save(tmp_path / "m.npy", np.eye(3))  # a problem scipy solved: its engine has no steps
    assert "does not run the six Hungarian steps" in invoke("solve", tmp_path / "m.npy", "--solver", "scipy").stderr
