"""Parse CSV, TSV and whitespace-separated text into a matrix, deciding about a header line and an
index column without guessing silently (see :func:`read_text_with_info`); errors name the line and
the column. :class:`MatrixSource` records what a reader decided on its own, for the CLI to say."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import LapInputError
from .formats import refuse_binary
from .text_layout import (columns_text, field_text, is_number, read_layout, shorten, split_fields, unclosed_quote,
                          without_comment)


@dataclass
class MatrixSource:
    """What the reader decided on its own about an input, so that the CLI can say so."""

    name: str
    skipped_header: str | None = None  # the first line, when it was skipped as a header
    dropped_index_column: bool = False
    notes: list[str] = field(default_factory=list)  # one line each, for people (stderr)


def read_text(data: bytes, name: str, delimiter: str | None = None, *, header: bool | None = None,
              index_col: bool = False):
    """Parse CSV/TSV/whitespace text into an int64 (if every value is an integer) or float64 matrix."""
    return read_text_with_info(data, name, delimiter, header=header, index_col=index_col)[0]


def read_text_with_info(data: bytes, name: str, delimiter: str | None = None, *, header: bool | None = None,
                        index_col: bool = False, coordinates: bool = False):
    """:func:`read_text`, returning ``(matrix, MatrixSource)``.

    ``header`` True or False settles whether the first line is a header. ``None`` never guesses
    silently: a first line none of whose fields is a number is a header (skipped, with a note);
    a first line that mixes numbers and text, or that is exactly ``0,1,…,m−1`` (the column labels
    pandas writes by default), is refused; any other numeric line is data. ``index_col`` drops the
    first column, as pandas' default ``to_csv()`` writes it (header ``,0,1,…``); such a file is
    refused without it. Errors name the line (1-based, in the file) and the column. ``coordinates``:
    the text holds a point set, whose costs are computed in float64 (as scipy's cdist computes them):
    integers past int64 are read as float64, not held exactly or refused as costs are.
    """
    text = data.decode("utf-8-sig", errors="replace")  # -sig: a BOM is not part of the first field
    lines = _LINE_BREAK.split(text)  # not str.splitlines, which breaks at \x0b, \x1c or U+2028 too
    layout = read_layout(lines, name, delimiter, header, index_col)
    delimiter, fields = layout.delimiter, layout.fields
    source = MatrixSource(name, dropped_index_column=index_col)
    start = layout.body_start
    if layout.header:
        source.skipped_header = layout.first
        if layout.guessed:  # no option asked for it: say so
            source.notes.append(f"skipped header line of {name}: {shorten(layout.first.strip())}")
        source.notes.extend(layout.notes)
    body = lines[start:]
    _check_holds_numbers(body, name)
    # float64 per value, plus the parser's own copy of the text
    check_host_memory(8 * len(fields) * len(body) + len(data), f"parsing {name}")
    if index_col:
        body = _drop_index_column(body, start, delimiter, name)
    # comments and blank lines off before any parse: a line of spaces is one empty field to np.loadtxt
    # with a delimiter, and a comment once sent integers past int64 to the float64 parse (rounded)
    body = [content for content in (line.split("#", 1)[0] for line in body) if content.strip()]
    if delimiter is None:  # np.loadtxt reads an empty last field where a line opens with a quote and ends in spaces
        body = [content.strip() for content in body]
    options = {"delimiter": delimiter, "ndmin": 2, "quotechar": '"'}  # "1" is 1, between spaces or commas
    try:  # integers stay exact; anything else parses as float64
        matrix = np.loadtxt(body, dtype=np.int64, **options)
    except (ValueError, OverflowError):
        matrix = None if coordinates else _wide_integers(body, options, name)
    if matrix is None:
        try:
            matrix = np.loadtxt(body, dtype=np.float64, **options)
        except ValueError as error:
            # numpy counts rows its own way (data rows, 0- or 1-based): find the line ourselves
            located = _locate_bad_value(lines, start, delimiter, name, index_col)
            raise LapInputError(located or f"cannot parse {name}: {first_line(error)}") from None
    if matrix.shape[1] == 0:
        raise LapInputError(f"{name} holds no numbers besides its index column")
    if layout.header and not index_col and not coordinates and _row_numbers(matrix):  # pandas' named RangeIndex:
        if layout.guessed:  # refused, as the header of 0, 1, … is; under --header, said
            raise LapInputError(_named_index(name, matrix.shape[0]) + ": pass --index-col to drop it, or --header "
                                "to solve it as costs")
        if not layout.notes:  # (a header one label short has said it already)
            source.notes.append(_named_index(name, matrix.shape[0]) + ": if it numbers the rows, pass --index-col")
    if matrix.dtype.kind == "f":
        _check_no_overflow(matrix, body, name, coordinates)
        if not coordinates:  # coordinates are float64 to cdist too: rounded, not refused
            _check_integers_not_rounded(matrix, body, name, options["delimiter"])
    return matrix, source


def _named_index(name: str, rows: int) -> str:
    return f"{name}: its first column is 0, 1, …, {rows - 1} under a header, as pandas writes a named index"


def _row_numbers(matrix: np.ndarray) -> bool:
    """Whether a matrix of three rows or more and two columns or more has 0, 1, …, n − 1 as its first
    column (two rows of random integers in [0, 2) would be one in four)."""
    rows, cols = matrix.shape
    return rows > 2 and cols > 1 and bool((matrix[:, 0] == np.arange(rows)).all())


def _check_holds_numbers(body: list[str], name: str) -> None:
    if not any(line.split("#", 1)[0].strip() for line in body):  # blank or comments only (np.loadtxt's)
        raise LapInputError(f"{name} holds no numbers")


def check_text_head(path, delimiter: str | None = None, *, header: bool | None = None,
                    index_col: bool = False, coordinates: bool = False) -> None:
    """The header decision of a text file from its first lines, so that several inputs are refused
    before the first is solved: what :func:`read_text_with_info` would refuse for its first two
    lines of content, a header with nothing after it, and rows of different lengths among the
    head's whole lines. Reads until 64 line breaks or 16 MiB; a head holding fewer than two whole
    lines of content (a long first row, many comments) is left to the read. ``coordinates``: a point
    set, whose first column 0, 1, … is a coordinate, not pandas' index (as the read takes it)."""
    try:
        with open(path, "rb") as handle:
            head, chunk, breaks = bytearray(), b"-", 0
            while chunk and len(head) < 1 << 24 and breaks <= 64:
                chunk = handle.read(1 << 16)
                head += chunk
                breaks += chunk.count(b"\n") + chunk.count(b"\r")  # this chunk's only: linear in the head
    except OSError as error:
        raise LapInputError(f"cannot read {path}: {error.strerror}") from None
    refuse_binary(bytes(head), str(path), "it is read as text: name it by what it holds")  # before earlier inputs run
    if chunk and breaks < 2:  # not the whole file, and no two whole lines in its head
        return
    lines = _LINE_BREAK.split(bytes(head).decode("utf-8-sig", errors="replace"))
    if chunk:  # not the whole file: its last line may be cut short
        lines = lines[:-1]
        if sum(1 for line in lines if line.split("#", 1)[0].strip()) < 2:
            return
    layout = read_layout(lines, str(path), delimiter, header, index_col)
    if not chunk:  # the whole file: a header alone is refused as the read refuses it
        _check_holds_numbers(lines[layout.body_start:], str(path))
    ragged = _locate_bad_value(lines, layout.body_start, layout.delimiter, str(path), index_col, numbers=False)
    if ragged:  # among the head's whole lines, as the read words a ragged row
        raise LapInputError(ragged)
    if not chunk and layout.header and layout.guessed and not index_col and not coordinates:  # a named index too
        rows = [split_fields(line, layout.delimiter) for line in map(without_comment, lines[layout.body_start:])
                if line.strip()]
        firsts = [row[0].strip() for row in rows]
        if len(rows) > 2 and len(rows[0]) > 1 and firsts == [str(i) for i in range(len(rows))]:
            raise LapInputError(_named_index(str(path), len(rows)) + ": pass --index-col to drop it, or --header to "
                                "solve it as costs")


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _check_integers_not_rounded(matrix: np.ndarray, body: list[str], name: str, delimiter) -> None:
    """Refuse integers past 2^53 beside infinities and nothing else: the user's integer costs with
    forbidden pairs, which float64 (the only dtype holding inf) would round. Beside decimals they
    are floats, rounded as any parser rounds them."""
    finite = np.isfinite(matrix)
    if finite.all() or not finite.any():  # no inf, or nothing else: no integers to round
        return
    values = matrix[finite]
    if float(np.abs(values).max()) < 2.0**53 or not bool((values == np.floor(values)).all()):
        return  # small enough to be exact (2^53 + 1 reads 2^53), or decimals: a float matrix
    fields = [field.strip() for line in body for field in split_fields(line, delimiter)]
    integers = [field for field in fields if _INTEGER.match(field)]
    if len(integers) + sum(bool(_INFINITY.fullmatch(field)) for field in fields) == len(fields) and not all(
            map(_held_by_float64, integers)):  # 2^54 is held exactly; 2^53 + 1 is not
        raise LapInputError(f"{name}: integers past 2^53 beside inf, which float64 would round (an integer matrix "
                            "holds no inf): give forbidden pairs a large finite cost")


def integer_text(field: str, most_digits: int) -> int | None:
    """The integer an integer ``field`` writes, or None past ``most_digits`` significant digits
    (leading zeros dropped first: int() refuses text past 4300 digits, counting them)."""
    text = field.strip()
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > most_digits:
        return None
    return -int(digits) if text.startswith("-") else int(digits)


def _held_by_float64(field: str) -> bool:
    """Whether float64 holds the integer ``field`` exactly (none past its range, 309 digits)."""
    value = integer_text(field, 309)
    return value is not None and abs(value) < 2**1024 and float(value) == value


_INFINITY = re.compile(r"(?<![\w.])[-+]?inf(inity)?(?!\w)", re.IGNORECASE)


def _check_no_overflow(matrix: np.ndarray, body: list[str], name: str, coordinates: bool = False) -> None:
    """Refuse a value beyond float64's range (1e400), which the parse makes an infinity, a forbidden
    pair: only an infinity the text writes (inf, -Infinity) is one."""
    infinite = int(np.isinf(matrix).sum())
    if infinite and infinite > sum(len(_INFINITY.findall(line.split("#", 1)[0])) for line in body):
        hint = ", which point costs are computed in" if coordinates else (
            "; in a cost matrix, write inf for a forbidden pair")
        raise LapInputError(f"{name} holds a value beyond float64's range (±1.8e308){hint}")


_INTEGER = re.compile(r"^\s*[-+]?\d+\s*$")


def _wide_integers(body: list[str], options: dict, name: str):
    """Integers that int64 cannot hold: exact as uint64 when they are all in [0, 2^64), refused
    otherwise (float64 would round them silently). None when the text is not all integers."""
    delimiter = options["delimiter"]
    fields = [field for line in body if line.strip() for field in split_fields(line, delimiter)]
    if not fields or not all(_INTEGER.match(field) for field in fields):
        return None
    values = [integer_text(field, 19) for field in fields]  # None: past 19 digits, so past 64 bits
    if all(value is not None and -(2**63) <= value < 2**63 for value in values):
        return None  # int64 failed for another reason (ragged rows): the float parse says which
    try:
        return np.loadtxt(body, dtype=np.uint64, **options)
    except (ValueError, OverflowError):
        rows = (line.split("#", 1)[0] for line in body)  # (integer fields: no '#' inside quotes)
        if len({len(split_fields(row, delimiter)) for row in rows if row.strip()}) > 1:
            return None  # ragged rows, not the integers: the float parse names them
        raise LapInputError(f"{name}: integers beyond 64 bits (or of both signs beyond int64): lapcli solves "
                            "integers exactly in 64 bits and will not round them to float64") from None


def _drop_index_column(body: list[str], start: int, delimiter: str | None, name: str) -> list[str]:
    kept = []
    for offset, line in enumerate(body):
        if not line.strip() or line.lstrip().startswith("#"):
            kept.append(line)
            continue
        if '"' in line or delimiter is None:  # a quoted index may hold the delimiter
            rest = (delimiter or " ").join(split_fields(line, delimiter)[1:])
        else:
            rest = line.partition(delimiter)[2]
        if not without_comment(rest).strip():  # (a comment after the label: the row was dropped, even all of them)
            opened = " (a '#' after its label opens a comment: quote a label holding one)" if "#" in rest else ""
            raise LapInputError(f"{name} line {start + offset + 1} holds only its index column{opened}")
        kept.append(rest)
    return kept


def _locate_bad_value(lines: list[str], start: int, delimiter: str | None, name: str, index_col: bool,
                      numbers: bool = True) -> str | None:
    """The first ragged row or non-numeric field (``numbers`` False: ragged row) from ``lines[start]``
    on, in np.loadtxt's terms."""
    expected = expected_line = None
    first_column = 1 if index_col else 0
    for index in range(start, len(lines)):
        content = without_comment(lines[index])  # np.loadtxt's comments (none inside quotes)
        if not content.strip():
            continue
        if '"' in content and unclosed_quote(content):
            return f"{name} line {index + 1}: a quote opens a field and is not closed on that line"
        fields = split_fields(content, delimiter)
        if expected is None:
            expected, expected_line = len(fields), index + 1
        elif len(fields) != expected:
            return (f"cannot parse {name}: ragged rows: line {index + 1} has {columns_text(len(fields))}, "
                    f"line {expected_line} has {columns_text(expected)}")
        for column in range(first_column, len(fields) if numbers else 0):
            if not is_number(fields[column]):
                labels = column == 0 and len(fields) > 1 and fields[0].strip() and all(map(is_number, fields[1:]))
                return (f"{name} line {index + 1}, column {column + 1}: {field_text(fields[column])}"
                        + (" (if the first column names the rows, pass --index-col)" if labels else ""))
    return None


MEMINFO = "/proc/meminfo"


def available_memory() -> int | None:
    """Bytes a new allocation can have: Linux's MemAvailable (free memory and the file cache the
    kernel gives back; free pages alone refused a 1.7 GB parse with 24 GB to give), else the free
    pages; None where neither is known."""
    try:
        with open(MEMINFO, encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # in kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def check_host_memory(bytes_needed: int, what: str) -> None:
    """Refuse to parse when the result clearly cannot fit in the memory that is available."""
    available = available_memory()
    if available is not None and bytes_needed > available:
        raise LapInputError(
            f"{what} needs about {bytes_needed / 2**30:.1f} GiB of memory, only "
            f"{available / 2**30:.1f} GiB are available; convert it to .npy (memory-mapped)"
        )


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
