"""`lap` and the files around it: what a run may replace (nothing of the user's it was not asked
to), and text that must not be read as other numbers or other lines than it holds."""

import sys

import pytest
from click.testing import CliRunner

from lapcli.cli.main import cli

LAP = [sys.executable, "-m", "lapcli"]


def invoke(*args):
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def one_line_error(result, fragment):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return result.exit_code == 2 and len(lines) == 1 and fragment in lines[0]


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
