"""`lap` and the files around it: what a run may replace (nothing of the user's it was not asked
to), and text that must not be read as other numbers or other lines than it holds."""

import json
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from lapcli.cli.main import cli

LAP = [sys.executable, "-m", "lapcli"]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def one_line_error(result, fragment):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return result.exit_code == 2 and len(lines) == 1 and fragment in lines[0]


def test_generate_into_an_hdf5_file_holding_other_datasets_is_refused(tmp_path):
    path = tmp_path / "keep.h5"
    with h5py.File(path, "w") as file:
        file["a"], file["group/b"] = np.zeros((2, 2)), np.ones((2, 2))
    result = invoke("generate", "--n", 3, "--seed", 1, "-o", f"{path}:/c", "-q")
    assert one_line_error(result, "holds /a, /group, /group/b"), result.stderr
    with h5py.File(path) as file:
        assert sorted(file) == ["a", "group"]
    costs = tmp_path / "costs.h5"  # a dataset where the new one's group would go
    assert invoke("generate", "--n", 3, "--seed", 1, "-o", costs, "-q").exit_code == 0
    assert one_line_error(invoke("generate", "--n", 3, "--seed", 1, "-o", f"{costs}:/costs/x", "-q"), "holds /costs,")
    linked = tmp_path / "linked.h5"  # links and attributes, which h5py's visit does not list
    with h5py.File(linked, "w") as file:
        file["c"], file["alias"], file.attrs["note"] = np.zeros((2, 2)), h5py.SoftLink("/c"), 1
        file["far"] = h5py.ExternalLink("other.h5", "/x")
    assert one_line_error(invoke("generate", "--n", 3, "--seed", 1, "-o", f"{linked}:/c", "-q"),
                          "holds /alias, /far, the attributes of /,")
    for _ in range(2):  # a file of the one dataset generated is written anew
        assert invoke("generate", "--n", 3, "--seed", 1, "-o", f"{tmp_path / 'solo.h5'}:/c", "-q").exit_code == 0
    assert invoke("generate", "--n", 3, "--seed", 1, "--batch", 2, "-o", tmp_path / "solo.h5",
                  "--dataset", "c", "-q").exit_code == 0


def test_an_output_that_is_the_file_on_stdin_is_refused(tmp_path):
    source = tmp_path / "m.csv"
    source.write_text("3,1\n2,4\n")
    with open(source, "rb") as stdin:
        result = subprocess.run([*LAP, "solve", "-", "-o", str(source), "-q"], stdin=stdin, capture_output=True,
                                text=True, check=False)
    assert result.returncode == 2 and "would overwrite the input on stdin" in result.stderr, result.stderr
    assert source.read_text() == "3,1\n2,4\n"
    with open(source, "rb") as stdin:  # another file, as before
        other = subprocess.run([*LAP, "solve", "-", "-o", str(tmp_path / "out.csv"), "-q"], stdin=stdin,
                               capture_output=True, text=True, check=False)
    assert other.returncode == 0 and (tmp_path / "out.csv").read_text().startswith("row,col")


@pytest.mark.parametrize("more", [(), ("--duals", "duals.json")])
def test_an_output_through_a_link_writes_the_file_it_links_to(tmp_path, monkeypatch, more):
    monkeypatch.chdir(tmp_path)
    np.save("m.npy", np.array([[3, 1], [2, 4]]))
    (tmp_path / "target.csv").write_text("OLD\n")
    (tmp_path / "link.csv").symlink_to("target.csv")
    (tmp_path / "dangling.csv").symlink_to("new.csv")
    for link, target in (("link.csv", "target.csv"), ("dangling.csv", "new.csv")):
        assert invoke("solve", "m.npy", "-o", link, *more, "-q").exit_code == 0
        assert (tmp_path / link).is_symlink() and (tmp_path / target).read_text() == "row,col\n0,1\n1,0\n"
    (tmp_path / "lost.csv").symlink_to("nowhere/x.csv")  # refused before the solve, where the link leads
    assert one_line_error(invoke("solve", "m.npy", "-o", "lost.csv", *more, "-q"), "nowhere does not exist")


def test_an_output_linked_to_dev_stdout_writes_stdout_not_over_its_file(tmp_path):
    """With stdout a file (``>> log``), a link to /dev/stdout resolves to that file: the answer goes
    to stdout after what the file held, not in a new file renamed over it."""
    np.save(tmp_path / "m.npy", np.array([[3, 1], [2, 4]]))
    (tmp_path / "out.csv").symlink_to("/dev/stdout")
    log = tmp_path / "log.txt"
    log.write_text("EARLIER LOG\n")
    with open(log, "a") as stdout:
        result = subprocess.run([*LAP, "solve", str(tmp_path / "m.npy"), "-o", str(tmp_path / "out.csv"), "-q"],
                                stdout=stdout, stderr=subprocess.PIPE, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert log.read_text() == "EARLIER LOG\nrow,col\n0,1\n1,0\n" and (tmp_path / "out.csv").is_symlink()
    (tmp_path / "out.npy").symlink_to("/dev/stdout")  # lap generate's writer too
    with open(log, "a") as stdout:
        result = subprocess.run([*LAP, "generate", "--n", "3", "--seed", "1", "-o", str(tmp_path / "out.npy"), "-q"],
                                stdout=stdout, stderr=subprocess.PIPE, text=True, check=False)
    assert result.returncode == 0 and log.read_bytes().startswith(b"EARLIER LOG\nrow,col\n0,1\n1,0\n\x93NUMPY")


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
def test_dev_stdout_itself_with_stdout_a_file_is_written_as_stdout(tmp_path):
    """-o /dev/stdout (and --report, --duals, lap generate -o) worked with stdout a pipe but, with stdout
    a file, was refused as "unknown assignment extension '(none)'": it is written as stdout is."""
    np.save(tmp_path / "m.npy", np.array([[3, 1], [2, 4]]))
    log = tmp_path / "log.txt"
    for command, expected in ((["solve", str(tmp_path / "m.npy"), "-o", "/dev/stdout"], b"row,col\n0,1\n1,0\n"),
                              (["solve", str(tmp_path / "m.npy"), "--duals", "/dev/stdout"], b'{"u": '),
                              (["generate", "--n", "2", "--seed", "1", "-o", "/dev/stdout"], b"\x93NUMPY")):
        with open(log, "w") as stdout:
            result = subprocess.run([*LAP, *command, "-q"], stdout=stdout, stderr=subprocess.PIPE, text=True, check=False)
        assert result.returncode == 0, result.stderr
        assert log.read_bytes().startswith(expected)


@pytest.mark.skipif(not os.path.exists("/dev/stderr"), reason="needs /dev/stderr")
def test_dev_stderr_with_stderr_a_file_is_written_through_stderr(tmp_path):
    """-o /dev/stderr with stderr a file was refused ("unknown assignment extension '(none)'"): it is
    written through stderr, after what stderr held, into the same file (not a new one renamed over)."""
    np.save(tmp_path / "m.npy", np.array([[3, 1], [2, 4]]))
    log = tmp_path / "err.txt"
    log.write_text("EARLIER\n")
    inode = log.stat().st_ino
    for flag, expected in (("-o", "row,col\n0,1\n1,0\n"), ("--duals", '{"u": ')):
        with open(log, "a") as stderr:
            done = subprocess.run([*LAP, "solve", str(tmp_path / "m.npy"), flag, "/dev/stderr", "-q"],
                                  stdout=subprocess.PIPE, stderr=stderr, text=True, check=False)
        assert (done.returncode, done.stdout) == (0, "")
        assert log.read_text().startswith("EARLIER\n") and expected in log.read_text() and log.stat().st_ino == inode


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
def test_generate_to_dev_stdout_writes_what_dash_writes():
    """lap generate -o - writes NPY for 'lap solve -'; -o /dev/stdout wrote CSV (a name without an
    extension), to a pipe or a file alike: it names stdout, and gets what stdout gets."""
    matrix, points = ["generate", "--n", "3", "--seed", "1", "-q"], ["generate", "--points", "--n", "3", "--seed", "1", "-q"]
    for command in (matrix, points):
        dash = subprocess.run([*LAP, *command, "-o", "-"], capture_output=True, check=True).stdout
        assert dash.startswith(b"\x93NUMPY")
        named = subprocess.run([*LAP, *command, "-o", "/dev/stdout"], capture_output=True, check=True).stdout
        assert named == dash


def test_integers_past_2_53_beside_inf_are_refused_not_rounded(tmp_path):
    """9007199254740993 is 2^53 + 1: float64, the only dtype that holds inf, reads 2^53, and the
    diagonal would look as cheap as the optimum."""
    path = tmp_path / "wide.csv"
    path.write_text("9007199254740993,9007199254740992,inf\n0,0,inf\ninf,inf,0\n")
    assert one_line_error(invoke("solve", path, "-q"), "integers past 2^53 beside inf")
    path.write_text("9007199254740992,inf\ninf,0\n")  # 2^53 itself is exact
    assert invoke("solve", path, "-o", "-", "-q").stdout == "row,col\n0,0\n1,1\n"
    path.write_text("0.5,9007199254740993\n0,inf\n")  # beside decimals: a float matrix, rounded as floats are
    assert invoke("solve", path, "-o", "-", "-q").exit_code == 0


@pytest.mark.parametrize("separator", ["\x0b", "\x0c", "\x1c", "\u0085", "\u2028"])
def test_only_newlines_and_carriage_returns_end_a_line_of_text(tmp_path, separator):
    path = tmp_path / "m.csv"
    path.write_bytes(f"1,2{separator}3,4\n5,6\n".encode())
    assert one_line_error(invoke("solve", path, "-q"), "line 1, column 2")
    path.write_bytes(b"3,1\r2,4\r")
    assert invoke("solve", path, "-o", "-", "-q").stdout == "row,col\n0,1\n1,0\n"


def test_an_error_of_one_of_several_inputs_names_that_input(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.csv").write_text("1,2\n3,4\n")
    (tmp_path / "nan.csv").write_text("1,nan\n2,3\n")
    assert one_line_error(invoke("solve", "ok.csv", "nan.csv", "-q"), "nan.csv: matrix contains invalid numeric entries")
    alone = invoke("solve", "nan.csv", "-q")  # one input: the message as scipy words it
    assert one_line_error(alone, "matrix contains invalid numeric entries") and "nan.csv" not in alone.stderr
    stdin = CliRunner().invoke(cli, ["solve", "ok.csv", "-", "-q"], input="1,nan\n2,3\n", catch_exceptions=False)
    assert one_line_error(stdin, "stdin: matrix contains invalid numeric entries")
    from lapcli.engines import registry

    if not registry.get("cuda-sap").available()[0]:  # an error of the machine, not of the input
        elsewhere = invoke("solve", "ok.csv", "nan.csv", "--solver", "cuda-sap", "-q")
        assert elsewhere.exit_code == 2 and "cannot run here" in elsewhere.stderr and "ok.csv:" not in elsewhere.stderr


@pytest.mark.parametrize("text, message", [
    ("1,2,3\n4,5\n", "cannot parse bad.csv: ragged rows: line 2 has 2 columns, line 1 has 3 columns"),
    ("a,b\n", "bad.csv holds no numbers"),  # a header alone
    ("a,b\n# c\n\n", "bad.csv holds no numbers"),
])
def test_a_later_inputs_ragged_head_or_bare_header_is_refused_before_the_first_is_solved(tmp_path, monkeypatch,
                                                                                        text, message):
    """Every INPUT's head is checked before the first is solved: no JSON line of ok.csv ahead of
    the error, which is the one the read itself gives."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.csv").write_text("1,2\n3,4\n")
    (tmp_path / "bad.csv").write_text(text)
    result = invoke("solve", "ok.csv", "bad.csv", "--json", "-q")
    assert one_line_error(result, message) and result.stdout == ""
    assert one_line_error(invoke("solve", "bad.csv", "-q"), message)  # alone: the read's own words
    (tmp_path / "fine.csv").write_text("a,b\n" + "1,2\n" * 20000 + "1,2,3\n")  # past the head (64 KiB): the read
    assert invoke("solve", "ok.csv", "fine.csv", "--json", "-q").stdout.count("\n") == 1


@pytest.mark.parametrize("solver", ["cuda", "cuda-sap", "lapx"])
def test_a_solver_that_cannot_run_here_is_refused_before_any_input_is_read(tmp_path, monkeypatch, solver):
    """As every option: a CSV's bad value is not reported ahead of it, and no input ahead is solved
    (a CUDA engine: its packages missing; a CPU engine: its own probe)."""
    import dataclasses

    from lapcli.cuda import probe
    from lapcli.engines import registry

    monkeypatch.setattr(probe, "cuda_installed", lambda: (False, "CuPy is not installed (a test)"))
    monkeypatch.setitem(registry.ENGINES, "lapx", dataclasses.replace(
        registry.ENGINES["lapx"], probe=lambda: (False, "lapx is not installed (a test)")))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.csv").write_text("1,2\n3,4\n")
    (tmp_path / "bad.csv").write_text("1,x\n2,3\n")
    for inputs in (["bad.csv"], ["ok.csv", "bad.csv"]):
        result = invoke("solve", *inputs, "--solver", solver, "--json")
        assert one_line_error(result, f"solver '{solver}' cannot run here"), result.output
        assert result.stdout == ""


@pytest.mark.parametrize("solver, what", [("sorted", "matches point sets (--points A B)"),
                                          ("scipy-batch", "solves stacks")])
def test_a_solver_that_takes_no_matrix_is_refused_before_any_input_is_read(tmp_path, monkeypatch, solver, what):
    """Told from the files' heads, not after the first is solved or the bad one read; the solvers
    it suggests all take a matrix (sorted was among them)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ok.csv").write_text("1,2\n3,4\n")
    (tmp_path / "bad.csv").write_text("1,x\n2,3\n")
    result = invoke("solve", "ok.csv", "bad.csv", "--solver", solver, "--json")
    assert one_line_error(result, f"solver '{solver}' {what}; ok.csv is one matrix (2-D): use auto,")
    assert result.stdout == "" and "sorted" not in result.stderr.split("use ")[-1]


def test_no_memory_to_map_an_npy_input_is_a_failure_not_bad_input(tmp_path, monkeypatch):
    import errno

    np.save(tmp_path / "m.npy", np.eye(3))

    def no_room(*args, **kwargs):
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(np, "load", no_room)
    result = invoke("solve", tmp_path / "m.npy", "-q")
    assert result.exit_code == 1 and "out of host memory: mapping" in result.stderr, result.stderr


def test_generate_refuses_a_file_its_file_system_has_no_room_for(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from lapcli.io import targets

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(targets.shutil, "disk_usage", lambda path: usage(10**6, 0, 10**5))
    result = invoke("generate", "--n", 200, "--seed", 1, "-o", tmp_path / "m.npy", "-q")  # 160,000 bytes of int32
    assert one_line_error(result, "it takes at least 160,000 bytes, and its file system has 100,000 bytes free")
    assert list(tmp_path.iterdir()) == []
    assert invoke("generate", "--n", 100, "--seed", 1, "-o", tmp_path / "m.npy", "-q").exit_code == 0  # 40,000
    monkeypatch.setattr(targets.shutil, "disk_usage", shutil.disk_usage)


@pytest.mark.parametrize("text, words", [
    ("1,2,3,\n4,5,6,\n", "line 1, column 4: an empty field (a trailing delimiter?)"),
    ("1,,3\n4,5,6\n7,8,9\n", "line 1, column 2: an empty field (a delimiter twice?)"),
    ("1,2\n3,\n", "line 2, column 2: an empty field"),
    ("1,\u00a0\n3,4\n", "line 1, column 2: an empty field (a trailing delimiter?)"),  # a no-break space alone
    ("1,2\n3,\u00a04\n5,x\n", "line 3, column 2: 'x' is not a number"),  # np.loadtxt takes " 4" (NBSP)
])
def test_a_field_that_is_no_number_is_named_as_it_is(tmp_path, text, words):
    path = tmp_path / "m.csv"
    path.write_bytes(text.encode())
    assert one_line_error(invoke("solve", path, "-q"), f"m.csv {words}")
    path.write_bytes("1,\u00a02\n3,4\n".encode())  # a number beside a no-break space, as np.loadtxt reads it
    assert invoke("solve", path, "-o", "-", "-q").stdout == "row,col\n0,0\n1,1\n"


def test_hdf5_is_not_written_through_a_link_to_stdout_and_a_plain_path_to_its_file_is_a_file(tmp_path):
    (tmp_path / "out.h5").symlink_to("/dev/stdout")
    log = tmp_path / "log.txt"
    with open(log, "a") as stdout:
        linked = subprocess.run([*LAP, "generate", "--n", "3", "--seed", "1", "-o", str(tmp_path / "out.h5"), "-q"],
                                stdout=stdout, stderr=subprocess.PIPE, text=True, check=False)
    assert linked.returncode == 2 and "it is stdout, where an HDF5 file cannot be written" in linked.stderr
    same = tmp_path / "same.h5"  # stdout and -o one plain file: written as a file, whole
    with open(same, "a") as stdout:
        plain = subprocess.run([*LAP, "generate", "--n", "3", "--seed", "1", "-o", str(same), "-q"],
                               stdout=stdout, stderr=subprocess.PIPE, text=True, check=False)
    assert plain.returncode == 0, plain.stderr
    with h5py.File(same) as file:
        assert file["costs"].shape == (3, 3)


def test_ctrl_c_in_a_command_run_by_click_itself_is_clicks_abort(monkeypatch):
    """lapcli's main says "lap: interrupted" itself; a CliRunner (standalone) run keeps Click's Abort."""
    import lapcli.cli.main as main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(main, "generate_blocks", interrupted)
    result = CliRunner().invoke(main.cli, ["generate", "--n", "3", "--seed", "1", "-o", "-"])
    assert result.exit_code == 1 and "Aborted!" in result.output


def test_a_path_that_exists_is_read_as_that_file_whatever_its_colon(tmp_path, monkeypatch):
    """x.h5:y/m.npy, a file in a folder whose name holds '.h5:', was read as dataset y/m.npy of x.h5
    ("no such file: x.h5"); FILE.h5:/path keeps naming a dataset where no such path exists."""
    monkeypatch.chdir(tmp_path)
    cost = np.array([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    (tmp_path / "x.h5:y").mkdir()
    np.save(tmp_path / "x.h5:y" / "m.npy", cost)
    np.save(tmp_path / "odd.npz:z.npy", cost)
    for spec in ("x.h5:y/m.npy", "odd.npz:z.npy"):
        result = invoke("solve", spec, "--json", "-q")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["objective"] == 5
    with h5py.File(tmp_path / "real.h5", "w") as h5:
        h5["c"] = cost
    assert json.loads(invoke("solve", "real.h5:c", "--json", "-q").stdout)["objective"] == 5
