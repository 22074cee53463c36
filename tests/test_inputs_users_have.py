"""Inputs and outputs users have: NumPy's own .npz, semicolon-separated files, /dev/null, and a
working dtype under ``auto``."""

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment as scipy_lsa

import lapcli

LAP = [sys.executable, "-m", "lapcli"]


def lap(*args, cwd):
    return subprocess.run(LAP + [str(a) for a in args], cwd=cwd, capture_output=True, text=True)


def test_npz_with_one_array_or_a_named_one_is_read(tmp_path):
    """One array, or a named one, is the matrix; several matrices unnamed are a batch; other
    arrays among them make the choice the caller's."""
    np.savez(tmp_path / "one.npz", costs=np.array([[4, 1], [2, 8]]))
    np.savez(tmp_path / "two.npz", a=np.eye(3), b=np.array([[4, 1], [2, 8]]))
    np.savez(tmp_path / "mixed.npz", a=np.arange(3), b=np.array([[4, 1], [2, 8]]))
    for spec in ("one.npz", "two.npz:b"):
        result = lap("solve", spec, "--json", "--quiet", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["objective"] == 3
    batch = lap("solve", "two.npz", "--json", "--quiet", cwd=tmp_path)
    assert batch.returncode == 0 and json.loads(batch.stdout)["objectives"] == [0.0, 3]
    several = lap("solve", "mixed.npz", "--quiet", cwd=tmp_path)
    assert several.returncode == 2 and "holds 2 arrays (a, b)" in several.stderr and "mixed.npz:NAME" in several.stderr
    missing = lap("solve", "two.npz:c", "--quiet", cwd=tmp_path)
    assert missing.returncode == 2 and "no array 'c'" in missing.stderr


def test_a_semicolon_separated_file_is_read_and_decimal_commas_are_refused(tmp_path):
    (tmp_path / "semi.csv").write_text("a;b;c\n4;1;3\n2;0;5\n3;2;2\n")
    result = lap("solve", "semi.csv", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["objective"] == 5
    (tmp_path / "comma.csv").write_text("1,5;2,0\n0,5;4,25\n")
    refused = lap("solve", "comma.csv", "--quiet", cwd=tmp_path)
    assert refused.returncode == 2 and "decimal commas" in refused.stderr


@pytest.mark.parametrize(("text", "options"), [
    ("cost (a, b)\n4 1 3\n2 0 5\n3 2 2\n", ["--header"]),  # a comma inside a title above spaced numbers
    ('"a, b" "c" "d"\n4 1 3\n2 0 5\n3 2 2\n', []),  # ... inside quoted labels
    ("job a\tjob b, late\tjob c\n4\t1\t3\n2\t0\t5\n3\t2\t2\n", []),  # ... inside tabbed labels
    ("costs\n4;1;3\n2;0;5\n3;2;2\n", ["--header"]),  # a title without the semicolons of the rows
])
def test_the_rows_under_a_header_decide_the_delimiter(tmp_path, text, options):
    """A header's labels may hold any separator: the delimiter is the data's (the header's comma made
    these files comma-separated, and unreadable even with --header)."""
    (tmp_path / "m.txt").write_text(text)
    result = lap("solve", "m.txt", "--json", "--quiet", *options, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["objective"] == 5 and json.loads(result.stdout)["n_rows"] == 3


@pytest.mark.parametrize("command", [["solve", "m.npy", "-o"], ["solve", "m.npy", "--report"], ["generate", "--n", "4", "-o"]])
def test_an_output_that_is_a_pipe_is_written_in_place_not_replaced(tmp_path, command):
    """Like /dev/null or /dev/stdout: written in place, as CSV/JSON; a rename over it (the atomic
    write of a regular file) would replace the device itself. A FIFO stands in for /dev/null here."""
    import os
    import stat
    import threading

    np.save(tmp_path / "m.npy", np.array([[4, 1], [2, 8]]))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = lap(*command, fifo, "--quiet", cwd=tmp_path)
    reader.join(timeout=30)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and received and received[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.npy", "pipe"]


@pytest.mark.parametrize("maximize", [False, True])
def test_auto_honours_a_working_dtype(rng, maximize):
    cost = rng.random((6, 9)) * 1e3
    for shaped in (cost, cost.T):
        solution = lapcli.solve(shaped, dtype="float32", maximize=maximize)
        assert solution.report.dtype == "float32"
        rounded = lapcli.solve(shaped.astype(np.float32).astype(np.float64), solver="numpy", maximize=maximize)
        chosen = shaped.astype(np.float32)[solution.row_ind, solution.col_ind].astype(np.float64).sum()
        assert abs(chosen - rounded.objective) <= 1e-6 * abs(rounded.objective)  # optimal for the float32 costs


def test_csv_integers_beyond_int64_stay_exact_or_are_refused(tmp_path):
    big = 2**64 - 1
    (tmp_path / "u64.csv").write_text(f"{big},{big - 5}\n{big - 15},{big}\n")
    result = lap("solve", "u64.csv", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["dtype"] == "uint64" and report["objective"] == (big - 5) + (big - 15) and report["certified"]
    (tmp_path / "wide.csv").write_text("100000000000000000000,1\n1,2\n")  # 10^20 > 2^64: float64 would round
    refused = lap("solve", "wide.csv", "--quiet", cwd=tmp_path)
    assert refused.returncode == 2 and "beyond 64 bits" in refused.stderr


def write_pandas_like_table(path, values, data_columns=False):
    """What pandas' to_hdf(format="table") writes for a numeric DataFrame, built with h5py: a group
    marked frame_table, a compound "table" (the index and one values block, or a field per column)
    and PyTables' index internals beside it (2-D datasets that are not costs)."""
    import h5py

    n, m = values.shape
    if data_columns:
        dtype = [("index", "<i8")] + [(f"c{j}", values.dtype.str) for j in range(m)]
        rows = [(i, *values[i]) for i in range(n)]
    else:
        dtype = [("index", "<i8"), ("values_block_0", values.dtype.str, (m,))]
        rows = [(i, values[i]) for i in range(n)]
    with h5py.File(path, "w") as handle:
        group = handle.create_group("df")
        group.attrs["pandas_type"] = b"frame_table"
        group.create_dataset("table", data=np.array(rows, dtype=dtype))
        group.create_dataset("_i_table/index/bounds", data=np.zeros((0, 127), dtype=np.int64))


@pytest.mark.parametrize("data_columns", [False, True])
def test_a_pandas_table_hdf5_is_read_as_its_values(tmp_path, data_columns):
    """to_hdf(format="table") files: the values are the matrix (not the index, not PyTables' index
    arrays, which an empty 0×127 'matrix' would have made a silent wrong answer)."""
    values = np.array([[85, 63, 51, 26], [30, 4, 7, 1], [17, 81, 64, 91], [50, 60, 97, 72], [63, 54, 55, 93]])
    write_pandas_like_table(tmp_path / "t.h5", values, data_columns)
    for spec in ("t.h5", "t.h5:/df"):
        result = lap("solve", spec, "--json", "--quiet", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert (report["n_rows"], report["n_cols"], report["objective"]) == (5, 4, 102)


def test_names_holding_i_are_matrices_unless_they_index_a_table(tmp_path):
    """Every name holding "_i_" was taken for PyTables' index internals: /c_i_j beside /w solved /w
    (a silent wrong matrix), and /cost_i_j alone was "no 2-D dataset". Only _i_T beside its table T is skipped."""
    import h5py

    with h5py.File(tmp_path / "two.h5", "w") as handle:
        handle["c_i_j"], handle["w"] = np.array([[1, 9], [9, 1]]), np.array([[100, 5], [5, 100]])
    result = lap("solve", "two.h5", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 2 and "holds several 2-D/3-D datasets (/c_i_j, /w)" in result.stderr
    with h5py.File(tmp_path / "one.h5", "w") as handle:
        handle["run_i_1/cost_i_j"] = np.array([[1, 9], [9, 1]])
        handle["_i_costs/index"] = np.zeros((0, 4))  # an _i_ group of no table beside it: data like any other
    result = lap("solve", "one.h5:/run_i_1/cost_i_j", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 0 and json.loads(result.stdout)["objective"] == 2
    result = lap("solve", "one.h5", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 2 and "(/_i_costs/index, /run_i_1/cost_i_j)" in result.stderr


def test_a_real_pandas_table_round_trips(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("tables")
    frame = pd.DataFrame(np.random.default_rng(3).random((6, 9)))
    frame.to_hdf(tmp_path / "f.h5", key="costs", format="table")
    result = lap("solve", "f.h5", "--json", "--quiet", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows, cols = scipy_lsa(frame.values)
    assert json.loads(result.stdout)["objective"] == pytest.approx(frame.values[rows, cols].sum())
