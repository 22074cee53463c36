"""Reading inputs: NPY and contiguous HDF5 datasets are memory-mapped, not read whole:
a GPU solve pages them straight into the pinned upload."""

import io
import os

import h5py
import numpy as np
import pytest

import lapcli
from lapcli.io.read import read_matrix, read_matrix_with_info
from lapcli.io.text import check_text_head


def test_npy_input_is_memory_mapped(tmp_path, rng):
    cost = rng.integers(0, 100, size=(30, 40))
    np.save(tmp_path / "m.npy", cost)
    loaded = read_matrix(str(tmp_path / "m.npy"))
    assert isinstance(loaded, np.memmap) and not loaded.flags.writeable
    np.testing.assert_array_equal(loaded, cost)


@pytest.mark.parametrize("dtype", ["<i4", ">f8", "<f4", "u1"])
def test_contiguous_hdf5_dataset_is_memory_mapped_in_place(tmp_path, rng, dtype):
    cost = (rng.random((3, 20, 25)) * 100).astype(dtype)
    with h5py.File(tmp_path / "m.h5", "w") as f:
        f.create_dataset("other", data=np.arange(1000))  # the dataset does not start the file
        f.create_dataset("group/costs", data=cost)
    loaded = read_matrix(str(tmp_path / "m.h5") + ":/group/costs")
    assert isinstance(loaded, np.memmap) and not loaded.flags.writeable
    assert loaded.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(loaded, cost)


@pytest.mark.parametrize("options", [dict(chunks=(5, 5)), dict(compression="gzip"), dict(fillvalue=7)])
def test_chunked_compressed_or_unwritten_hdf5_is_read_whole(tmp_path, rng, options):
    cost = rng.random((20, 25))
    with h5py.File(tmp_path / "m.h5", "w") as f:
        if "fillvalue" in options:  # created, never written: no storage to map
            f.create_dataset("costs", shape=cost.shape, dtype=cost.dtype, **options)
            cost = np.full(cost.shape, 7.0)
        else:
            f.create_dataset("costs", data=cost, **options)
    loaded = read_matrix(str(tmp_path / "m.h5"))
    assert not isinstance(loaded, np.memmap)
    np.testing.assert_array_equal(loaded, cost)


def test_hdf5_values_stored_in_another_layout_are_read_as_hdf5_converts_them(tmp_path):
    """12-bit integers at bit 4 of 16 and a 4-byte float h5py shows as float64 are contiguous too:
    their bytes mapped as NumPy's dtype were other numbers (an objective 16 times the true one, and
    one of 1e-312 with a wrong assignment, exit 0)."""
    from h5py import h5d, h5s, h5t

    cost = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    packed = h5t.STD_U16LE.copy()
    packed.set_precision(12)
    packed.set_offset(4)
    narrow_float = h5t.IEEE_F32LE.copy()
    narrow_float.set_fields(31, 23, 8, 8, 15)
    narrow_float.set_offset(8)
    narrow_float.set_precision(24)
    with h5py.File(tmp_path / "m.h5", "w") as f:
        for name, stored, values in (("packed", packed, cost.astype(np.uint16)), ("float", narrow_float, cost * 1.0)):
            h5d.create(f.id, name.encode(), stored, h5s.create_simple(cost.shape)).write(h5s.ALL, h5s.ALL, values)
        f["after"] = np.arange(64.0)  # the 4-byte float's 8-byte view ran past its storage into this
    for name in ("packed", "float"):
        loaded = read_matrix(f"{tmp_path / 'm.h5'}:/{name}")
        assert not isinstance(loaded, np.memmap) and loaded.tolist() == cost.tolist(), name
        assert lapcli.solve(loaded).objective == 5


def test_an_hdf5_dataset_never_written_or_written_in_part_is_refused(tmp_path):
    """A writer that stopped between creating a dataset and writing it leaves storage HDF5 reads as
    its fill value, 0: solved as costs (objective 0.0, exit 0). A fill value the writer chose
    stands for what it left, and an empty dataset has nothing to write."""
    from lapcli.errors import LapInputError

    with h5py.File(tmp_path / "m.h5", "w") as f:
        f.create_dataset("never", shape=(3, 3), dtype="f8")
        part = f.create_dataset("part", shape=(4, 4), dtype="f8", chunks=(2, 4))
        part[0:2] = [[5, 1, 9, 9], [1, 5, 9, 9]]
        f.create_dataset("filled", shape=(3, 3), dtype="f8", fillvalue=7.0)
        f.create_dataset("empty", data=np.zeros((0, 3)))
        f.create_dataset("batch/0", shape=(2, 2), dtype="i4")
    for name in ("never", "part", "batch"):
        with pytest.raises(LapInputError, match="was never written, or only in part: HDF5 reads 0 where no value"):
            read_matrix(f"{tmp_path / 'm.h5'}:/{name}")
    assert read_matrix(f"{tmp_path / 'm.h5'}:/filled").tolist() == [[7.0] * 3] * 3
    assert read_matrix(f"{tmp_path / 'm.h5'}:/empty").shape == (0, 3)


def test_an_hdf5_name_that_is_not_utf8_is_refused_naming_it(tmp_path):
    """h5py gives such a name as bytes: the batch order failed as an internal error, the search as
    "a bytes-like object is required", and an NPZ written back named the member by its repr."""
    import h5py

    with h5py.File(tmp_path / "l1.h5", "w") as handle:
        group = handle.create_group("g")
        group["0"] = np.eye(2)
        group.create_dataset(b"co\xfbt", data=np.eye(2))
    for spec in ("l1.h5:/g", "l1.h5"):
        with pytest.raises(lapcli.LapInputError, match=r"holds b'(g/)?co\\xfbt'.*a name that is not UTF-8 text"):
            read_matrix(str(tmp_path / spec))
    assert read_matrix(str(tmp_path / "l1.h5:/g/0")).tolist() == [[1, 0], [0, 1]]  # named: read as any other


def test_memory_mapped_hdf5_solves_like_the_array(tmp_path, rng):
    cost = rng.integers(0, 50, size=(40, 60)).astype(np.int32)
    with h5py.File(tmp_path / "m.h5", "w") as f:
        f.create_dataset("costs", data=cost)
    solution = lapcli.solve(read_matrix(str(tmp_path / "m.h5")))
    from scipy.optimize import linear_sum_assignment

    rows, cols = linear_sum_assignment(cost)
    assert solution.objective == int(cost[rows, cols].sum())


def test_a_csv_value_beyond_float64_is_refused_and_a_written_inf_is_forbidden(tmp_path):
    """1e400 parses to inf, which would read as a forbidden pair: refused. inf, -Infinity and INF,
    written, are infinities (a forbidden pair when minimising, as for scipy)."""
    from lapcli.errors import LapInputError

    (tmp_path / "over.csv").write_text("1,1e400\n2,3\n")
    with pytest.raises(LapInputError, match="beyond float64"):
        read_matrix(str(tmp_path / "over.csv"))
    (tmp_path / "inf.csv").write_text("# info\n1,inf\n-Infinity,INF\n")
    matrix = read_matrix(str(tmp_path / "inf.csv"))
    assert np.isinf(matrix).sum() == 3 and matrix[0, 0] == 1



def test_a_dataset_behind_an_external_link_is_read_from_the_file_that_holds_it(tmp_path, monkeypatch):
    """The memory map took the linked dataset's offset in the file named, not the one holding it:
    a larger linking file gave its own bytes (objective 0.0, certified), a smaller one an mmap error."""
    cost = np.array([[9.0, 1.0], [1.0, 9.0]])
    with h5py.File(tmp_path / "t.h5", "w") as h5:
        h5["costs"] = cost
    with h5py.File(tmp_path / "large.h5", "w") as h5:
        h5["filler"] = np.zeros(4096)
        h5["costs"] = h5py.ExternalLink("t.h5", "/costs")
    with h5py.File(tmp_path / "small.h5", "w") as h5:
        h5["costs"] = h5py.ExternalLink("t.h5", "/costs")
    monkeypatch.chdir(tmp_path.parent)  # the link resolves beside the linking file, not in the working folder
    for name in ("large.h5", "small.h5"):
        read = read_matrix(f"{tmp_path / name}:/costs")
        assert np.array_equal(read, cost)
        assert lapcli.solve(read).objective == 2.0


def test_a_file_of_external_links_alone_says_how_to_name_one(tmp_path):
    """The scan for a matrix does not follow external links; the error said only "holds no 2-D dataset"."""
    with h5py.File(tmp_path / "t.h5", "w") as h5:
        h5["costs"] = np.eye(2)
    with h5py.File(tmp_path / "links.h5", "w") as h5:
        h5["g/costs"] = h5py.ExternalLink("t.h5", "/costs")
    with pytest.raises(lapcli.LapInputError, match=r"external links are not searched: name one, as .*:/g/costs"):
        read_matrix(str(tmp_path / "links.h5"))


@pytest.mark.parametrize("comment", [" # ns", "\n# a comment line"])
def test_integers_past_int64_beside_a_comment_stay_exact_or_are_refused(tmp_path, comment):
    """A comment sent text integers past int64 to the float64 parse, which rounded 2^63 + 2 to 2^63:
    a wrong answer, certified. They are uint64 as without it; past 64 bits, or negative past int64,
    refused."""
    (tmp_path / "u.csv").write_text(f"9223372036854775810,9223372036854775808{comment}\n"
                                    "9223372036854775808,9223372036854775810\n")
    matrix = read_matrix(str(tmp_path / "u.csv"))
    assert matrix.dtype == np.uint64 and int(matrix[0, 0]) == 2**63 + 2
    (tmp_path / "n.csv").write_text(f"-9223372036854775809,0{comment}\n0,-9223372036854775809\n")
    with pytest.raises(lapcli.LapInputError, match="beyond 64 bits"):
        read_matrix(str(tmp_path / "n.csv"))


@pytest.mark.parametrize("big", ["18446744073709551615", "9223372036854775810"])
def test_ragged_rows_of_integers_past_int64_are_named_ragged(tmp_path, big):
    """uint64 integers in rows of several lengths: the rows are what is wrong, as for small ones
    (the message blamed the integers: "beyond 64 bits")."""
    (tmp_path / "r.csv").write_text(f"{big},1,3 # a comment\n# a line of one\n2,0\n3,2,2\n")
    with pytest.raises(lapcli.LapInputError, match="ragged rows: line 3 has 2 columns, line 1 has 3 columns"):
        read_matrix(str(tmp_path / "r.csv"))
    (tmp_path / "s.csv").write_text(f"{big},-0\n{big},0\n")  # rows alike, -0 no uint64: refused, not rounded
    with pytest.raises(lapcli.LapInputError, match="beyond 64 bits"):
        read_matrix(str(tmp_path / "s.csv"))


def test_integers_past_the_digits_python_converts_are_bad_input(tmp_path):
    """Past 4300 digits int() raises ValueError (Python's limit on converting text): a text matrix
    of such an integer was an internal error; it is past 64 bits, refused as such. Leading zeros
    count toward that limit, not toward the value: 2^53 + 1 written with 4400 of them beside inf
    is refused as any integer float64 would round."""
    huge = "1" + "0" * 5000
    for text in (f"{huge},1\n1,1\n", f"-{huge},1\n1,1\n", f"a,b\n{huge},1\n1,1\n"):
        (tmp_path / "d.csv").write_text(text)
        with pytest.raises(lapcli.LapInputError, match="beyond 64 bits"):
            read_matrix(str(tmp_path / "d.csv"))
    (tmp_path / "z.csv").write_text(f"{'0' * 4400}9007199254740993,inf\n1,2\n")
    with pytest.raises(lapcli.LapInputError, match="integers past 2\\^53 beside inf"):
        read_matrix(str(tmp_path / "z.csv"))
    (tmp_path / "o.csv").write_text(f"{'0' * 4400}7,1\n1,1\n")
    assert read_matrix(str(tmp_path / "o.csv")).tolist() == [[7, 1], [1, 1]]
    from lapcli.io.read import batch_order  # a batch's names, numeric without int(): any digits

    assert batch_order(["1" + "0" * 5000, "010", "9"]) == ["9", "010", "1" + "0" * 5000]
    assert batch_order(["\u0661", "\u0660"]) == ["\u0660", "\u0661"]  # Arabic-Indic 1, 0


@pytest.mark.parametrize("name, text", [("s.csv", "1,2\n3,4\n  \n"), ("t.tsv", "1\t2\n  # note\n3\t4\n\t\n"),
                                        ("c.csv", "1;2\r\n3;4\r\n \r\n")])
def test_lines_of_spaces_are_blank_lines(tmp_path, name, text):
    """With a delimiter, np.loadtxt read a line of spaces (an editor's last line) as one empty field:
    'the number of columns changed from 2 to 1'."""
    (tmp_path / name).write_text(text, newline="")
    assert read_matrix(str(tmp_path / name)).tolist() == [[1, 2], [3, 4]]


def test_values_in_missing_or_short_files_are_refused_not_read_as_zeros(tmp_path, monkeypatch):
    """HDF5 fills what a virtual dataset's missing source or a short external raw file does not
    hold with its fill value: costs nobody wrote."""
    from lapcli.errors import LapInputError

    monkeypatch.chdir(tmp_path)
    cost = np.arange(9.0).reshape(3, 3) % 4
    with h5py.File("source.h5", "w") as f:
        f["x"] = cost
    layout = h5py.VirtualLayout(shape=(3, 3), dtype="f8")
    layout[:] = h5py.VirtualSource("source.h5", "x", shape=(3, 3))
    with h5py.File("virtual.h5", "w") as f:
        f.create_virtual_dataset("costs", layout, fillvalue=0)
        f.create_group("batch").create_virtual_dataset("0", layout, fillvalue=0)
    np.testing.assert_array_equal(read_matrix("virtual.h5:/costs"), cost)
    (tmp_path / "source.h5").rename(tmp_path / "moved.h5")
    for spec in ("virtual.h5:/costs", "virtual.h5:/batch"):
        with pytest.raises(LapInputError, match="source source.h5:x is missing"):
            read_matrix(spec)
    with h5py.File("source.h5", "w") as f:  # the file again, without the dataset
        f["y"] = cost
    with pytest.raises(LapInputError, match="source source.h5:x is missing"):
        read_matrix("virtual.h5:/costs")
    (tmp_path / "far").mkdir()  # an absolute source moved beside the file that names it: HDF5 finds it
    with h5py.File("far/source.h5", "w") as f:
        f["x"] = cost
    far = h5py.VirtualLayout(shape=(3, 3), dtype="f8")
    far[:] = h5py.VirtualSource(str(tmp_path / "far" / "source.h5"), "x", shape=(3, 3))
    with h5py.File("far/virtual.h5", "w") as f:
        f.create_virtual_dataset("costs", far, fillvalue=0)
    (tmp_path / "moved").mkdir()
    for name in ("source.h5", "virtual.h5"):
        (tmp_path / "far" / name).rename(tmp_path / "moved" / name)
    np.testing.assert_array_equal(read_matrix("moved/virtual.h5"), cost)
    (tmp_path / "raw.bin").write_bytes(cost.tobytes()[:40])
    with h5py.File("external.h5", "w") as f:
        f.create_dataset("costs", shape=(3, 3), dtype="f8", external=[("raw.bin", 0, 72)])
    with h5py.File("declared.h5", "w") as f:  # a segment declared longer than the dataset needs
        f.create_dataset("costs", shape=(3, 3), dtype="f8", external=[("raw.bin", 0, 1000)])
    for spec in ("external.h5", "declared.h5"):
        with pytest.raises(LapInputError, match="raw.bin, which is missing or shorter"):
            read_matrix(spec)
    (tmp_path / "raw.bin").write_bytes(cost.tobytes())
    np.testing.assert_array_equal(read_matrix("external.h5"), cost)
    np.testing.assert_array_equal(read_matrix("declared.h5"), cost)


@pytest.mark.parametrize("text, expected", [("3 1 2\n1\t3\t2\n2\t1\t3\n", [[3, 1, 2], [1, 3, 2], [2, 1, 3]]),
                                            ("1 9\n9\t1\n", [[1, 9], [9, 1]]), ("1\t9\n9 1\n", [[1, 9], [9, 1]]),
                                            ("1\t2\n3\t4\n", [[1, 2], [3, 4]])])
def test_spaces_beside_tabs_are_whitespace_as_loadtxt_reads_them(tmp_path, text, expected):
    """A tab in one of the first two lines made tab the delimiter: '3 1 2' above tabbed rows was one
    field, "not a number", and dropped as a header (a 2 × 3 problem solved silently under -q); '1 9'
    above '9<tab>1' was "an index column". np.loadtxt reads each as its whitespace-separated matrix."""
    (tmp_path / "m.txt").write_text(text)
    assert read_matrix(str(tmp_path / "m.txt")).tolist() == expected == np.loadtxt(tmp_path / "m.txt").tolist()


@pytest.mark.parametrize("text, other", [("1,2,3\n4,5,6\n", "','"), ("a,b\n1,2\n", "','"), ("1;2\n3;4\n", "';'"),
                                         ("1 2\n3 4\n", "spaces")])
def test_a_tsv_of_another_separator_is_named_as_such(tmp_path, text, other):
    """A .tsv is read tab-separated: one of commas took its first line for a header and refused the
    second as "'4,5,6' is not a number"; one column (no separator at all) is still a .tsv's."""
    (tmp_path / "m.tsv").write_text(text)
    with pytest.raises(lapcli.LapInputError, match=f"hold no tab and part their values with {other}: name it"):
        read_matrix(str(tmp_path / "m.tsv"))
    (tmp_path / "one.tsv").write_text("# a, b\n1\n2\n")
    assert read_matrix(str(tmp_path / "one.tsv")).tolist() == [[1], [2]]
    for text in ("1,5\n2,5\n", "cost\n1,5\n"):  # one column of decimal commas, or two of values: either said
        (tmp_path / "one.tsv").write_text(text)
        with pytest.raises(lapcli.LapInputError, match="name it .csv, or write decimal points if they are decimal commas"):
            read_matrix(str(tmp_path / "one.tsv"))
    (tmp_path / "one.tsv").write_text("cost,USD\n5\n3\n")  # one column's label holding a comma
    assert read_matrix(str(tmp_path / "one.tsv")).tolist() == [[5], [3]]
    (tmp_path / "one.tsv").write_text("cost, USD\n5\n3\n")
    assert read_matrix(str(tmp_path / "one.tsv"), header=True).tolist() == [[5], [3]]
    (tmp_path / "one.tsv").write_text("10 20\n5\n7\n")  # a header of numbers, as --header says: not a row
    assert read_matrix(str(tmp_path / "one.tsv"), header=True).tolist() == [[5], [7]]


@pytest.mark.parametrize("text, line", [("10 2\t3\n4 5\t6\n", 1), ("a\tb\n1 500\t2 300\n", 2), ("1\t2\n3\t4 5\n", 2)])
def test_numbers_parted_by_spaces_inside_a_tabbed_field_are_named_not_guessed(tmp_path, text, line):
    """Spaces and tabs both between numbers: two separators, or digit groups ('1 500'); read either
    way it would be another matrix, so it is refused, saying so (it said "use --header")."""
    (tmp_path / "m.txt").write_text(text)
    with pytest.raises(lapcli.LapInputError, match=f"line {line}, column .: '[0-9 ]+' is not a number: spaces part "
                                                   r"numbers inside one field \(two separators, or digit groups\?\); use"):
        read_matrix(str(tmp_path / "m.txt"))


def test_a_named_pandas_index_is_not_solved_as_costs_by_a_guess(tmp_path):
    """pandas writes a named index's name into the first header cell (no empty field, no label short):
    'task,w1,w2,w3' above rows numbered 0, 1, 2 was solved as a 3 × 4 problem, objective 1 for 4."""
    (tmp_path / "named.csv").write_text("task,w1,w2,w3\n0,5,3,2\n1,1,4,6\n2,7,8,0\n")
    with pytest.raises(lapcli.LapInputError, match=r"first column is 0, 1, …, 2 under a header, as pandas writes a "
                                                   r"named index: pass --index-col to drop it, or --header to solve"):
        read_matrix(str(tmp_path / "named.csv"))
    assert read_matrix(str(tmp_path / "named.csv"), index_col=True).tolist() == [[5, 3, 2], [1, 4, 6], [7, 8, 0]]
    kept, source = read_matrix_with_info(str(tmp_path / "named.csv"), header=True)  # asked: solved, and said
    assert kept.shape == (3, 4) and any("pass --index-col" in note for note in source.notes)
    with pytest.raises(lapcli.LapInputError, match="as pandas writes a named index"):  # before any input is solved
        check_text_head(tmp_path / "named.csv")
    (tmp_path / "two.csv").write_text("a,b\n0,5\n1,3\n")  # two rows: one in four random pairs reads so, not refused
    assert read_matrix(str(tmp_path / "two.csv")).tolist() == [[0, 5], [1, 3]]
    (tmp_path / "header.csv").write_text("a,b,c\n1,2,3\n")  # a header read as data: no index column to name
    with pytest.raises(lapcli.LapInputError, match=r"'a' is not a number$"):
        read_matrix(str(tmp_path / "header.csv"), header=False)
    (tmp_path / "names.csv").write_text("name,a,b\nx,1,2\ny,3,4\n")  # row names: the refusal says what to pass
    with pytest.raises(lapcli.LapInputError, match=r"'x' is not a number \(if the first column names the rows, pass "):
        read_matrix(str(tmp_path / "names.csv"))


@pytest.mark.parametrize("text, line", [("job #1,5,6\njob #2,7,8\n", 2), ("id 1 2\nx 7 5\njob #1 8 9\n", 3)])
def test_a_row_of_a_label_and_a_comment_is_refused_not_dropped(tmp_path, text, line):
    """With --index-col, '#' after a row's label opens a comment, as np.loadtxt reads it: such a
    row was dropped without a word ('job #1,5,6' twice: a 0 × 1 problem, objective 0, exit 0)."""
    (tmp_path / "m.csv").write_text(text)
    with pytest.raises(lapcli.LapInputError, match=f"line {line} holds only its index column .a '#' after its label"):
        read_matrix(str(tmp_path / "m.csv"), index_col=True, header=True if line == 3 else None)


def test_a_header_of_words_above_tabbed_rows_keeps_the_tabs(tmp_path):
    """One column with row labels of two words, as pandas (sep='\\t', index_label=False) and R's
    write.table write it: 'cost' has no tab, and the labels' spaces are not delimiters."""
    (tmp_path / "one.txt").write_text("cost\nrow 1\t5\nrow 2\t7\n")
    assert read_matrix(str(tmp_path / "one.txt"), index_col=True).tolist() == [[5], [7]]
    (tmp_path / "two.txt").write_text("a title\n1\t3\t2\n2\t1\t3\n")
    assert read_matrix(str(tmp_path / "two.txt"), header=True).tolist() == [[1, 3, 2], [2, 1, 3]]
    # labels counted as the words they are: two above three tabbed fields is an index column, not a
    # header of one label above a 2 × 3 problem of row names solved as costs; two above two a header
    (tmp_path / "idx.txt").write_text("job_a job_b\n0\t5\t3\n1\t2\t4\n")
    with pytest.raises(lapcli.LapInputError, match="looks like it has an index column .line 1 has 2 columns, line 2 has 3"):
        read_matrix(str(tmp_path / "idx.txt"))
    assert read_matrix(str(tmp_path / "idx.txt"), index_col=True).tolist() == [[5, 3], [2, 4]]
    (tmp_path / "c.txt").write_text("c0 c1\n9\t1\n3\t4\n")
    assert read_matrix(str(tmp_path / "c.txt")).tolist() == [[9, 1], [3, 4]] == np.loadtxt(tmp_path / "c.txt", skiprows=1).tolist()


@pytest.mark.parametrize("available_kb, refused", [(8_000_000, False), (1_000, True)])
def test_text_parsing_is_refused_only_past_the_memory_the_kernel_can_give(tmp_path, monkeypatch, available_kb,
                                                                        refused):
    """The memory check reads Linux's MemAvailable (free memory and the file cache the kernel gives
    back), not the free pages alone: with the cache full of a file just written, a parse that fits
    was refused as bad input."""
    from lapcli.errors import LapInputError
    from lapcli.io import text

    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal: 9000000 kB\nMemFree: 1000 kB\nMemAvailable: {available_kb} kB\n")
    monkeypatch.setattr(text, "MEMINFO", str(meminfo))
    assert text.available_memory() == available_kb * 1024
    if refused:
        with pytest.raises(LapInputError, match=r"needs about 1.0 GiB of memory, only 0.0 GiB are available"):
            text.check_host_memory(2**30, "parsing m.csv")
    else:
        text.check_host_memory(2**30, "parsing m.csv")  # 1 GiB of 7.6: parsed
    monkeypatch.setattr(text, "MEMINFO", str(tmp_path / "none"))  # no /proc: the free pages, as the OS counts them
    pages = {"SC_AVPHYS_PAGES": 3, "SC_PAGE_SIZE": 4096}
    monkeypatch.setattr(os, "sysconf", lambda name: pages[name])
    assert text.available_memory() == 3 * 4096


def _npz_cases(tmp_path):
    """NPZ archives of every layout read_npz tells apart, with the name (or None) to read."""
    import zipfile

    m, stack = np.arange(6.0).reshape(2, 3), np.zeros((2, 3, 3), np.int32)
    cases = {"one": ({"costs": m}, None), "stack": ({"s": stack}, None), "batch": ({"1": m, "0": m.T}, None),
             "zero": ({"0": m}, None), "mixed": ({"a": m, "b": np.arange(3)}, None), "named": ({"a": m, "b": stack}, "b"),
             "missing": ({"a": m}, "z"), "none": ({}, None), "complex": ({"c": m.astype(complex)}, None),
             "objects": ({"o": np.array([[None, 1]], dtype=object)}, None), "wide": ({"f": m.astype(np.longdouble)}, None)}
    for key, (arrays, name) in cases.items():
        if key == "objects":
            np.savez(tmp_path / f"{key}.npz", allow_pickle=True, **arrays)
        else:
            np.savez_compressed(tmp_path / f"{key}.npz", **arrays)
        yield key, tmp_path / f"{key}.npz", name
    np.savez(tmp_path / "vector-complex.npz", a=np.arange(3), b=m.astype(complex))  # no batch: each read, b refused
    yield "vector-complex", tmp_path / "vector-complex.npz", None
    npy = io.BytesIO()
    np.save(npy, m)
    with zipfile.ZipFile(tmp_path / "raw.npz", "w") as archive:  # a member that is no NPY array
        archive.writestr("a.npy", np.eye(2).tobytes())
        archive.writestr("b.txt", b"1,2")
    yield "raw", tmp_path / "raw.npz", None
    yield "raw named", tmp_path / "raw.npz", "b.txt"
    with zipfile.ZipFile(tmp_path / "bare.npz", "w") as archive:  # NPY members by their bytes, not their names
        archive.writestr("x", npy.getvalue())  # np.load finds "x" before "x.npy"
        archive.writestr("x.npy", b"no array")
    for name in (None, "x"):
        yield "bare", tmp_path / "bare.npz", name
    with zipfile.ZipFile(tmp_path / "prefix.npz", "w") as archive:  # NPY's magic and nothing after it
        archive.writestr("a.npy", np.lib.format.MAGIC_PREFIX)
    yield "prefix", tmp_path / "prefix.npz", None


def test_an_npz_input_s_rank_is_read_s_from_the_headers_alone(tmp_path, monkeypatch):
    """The check of several inputs before any is solved reads an NPZ's member headers only: the
    rank it gives, and every refusal, are those of the read, which decompresses each member once
    (the check decompressed them too, doubling the read of a large one)."""
    from lapcli.io import npz
    from lapcli.io.read import input_rank

    loads = []
    real_member = npz._npz_member
    monkeypatch.setattr(npz, "_npz_member", lambda *args: loads.append(args[2]) or real_member(*args))
    for key, path, name in _npz_cases(tmp_path):
        spec = str(path) + (f":{name}" if name else "")
        try:
            found = read_matrix(spec)
        except lapcli.LapInputError as error:
            with pytest.raises(lapcli.LapInputError) as refused:
                input_rank(spec)
            assert str(refused.value) == str(error), key
            assert key != "vector-complex" or "has dtype complex128" in str(error)  # every member read first
            continue
        del loads[:]
        assert input_rank(spec) == (3 if isinstance(found, list) else found.ndim), key
        assert loads == [], key  # no member's data read
        read_matrix(spec)
        assert sorted(loads) == sorted(set(loads)) and loads, key  # each member read once


def test_an_npz_batch_s_rank_lists_its_members_once(tmp_path, monkeypatch):
    """A batch archive of B members: its names are listed once for the check, not once a member
    (20,000 members took 11.6 s to check against 0.9 s to read)."""
    import zipfile

    from lapcli.io.read import input_rank

    np.savez(tmp_path / "b.npz", **{str(i): np.eye(2) for i in range(300)})
    listed = []
    real = zipfile.ZipFile.namelist
    monkeypatch.setattr(zipfile.ZipFile, "namelist", lambda self: listed.append(1) or real(self))
    assert input_rank(str(tmp_path / "b.npz")) == 3
    assert len(listed) <= 2, len(listed)  # np.load's own listing, and the check's
