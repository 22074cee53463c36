"""What the first lines of a text input settle before any parse: the delimiter, whether the first
line is a header (never guessed silently), whether a header's width says the rows carry an index
column; and how a line splits into fields, as np.loadtxt with a quote character reads it."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field

from ..errors import LapInputError
from .formats import DATA_FOLLOWS


@dataclass
class Layout:
    """What the first two lines of content settle: the delimiter and whether the first is a header."""

    delimiter: str | None
    header: bool
    guessed: bool  # no option settled the header
    first_index: int  # the first line of content (0-based)
    second_index: int | None
    first: str  # its text without a comment
    fields: list[str]
    second_width: int | None
    notes: list[str] = field(default_factory=list)  # what the read says of the header, for people

    @property
    def body_start(self) -> int:
        """The first line past the header (0-based)."""
        return self.first_index + (1 if self.header else 0)


_DECIMAL_COMMA = re.compile(r"^\s*[-+]?\d*,\d+(?:[eE][-+]?\d+)?\s*$")  # '1,5': a number, in some locales


def read_layout(lines: list[str], name: str, delimiter: str | None, header: bool | None, index_col: bool) -> Layout:
    """The delimiter and the header decision (:func:`read_text_with_info`) from ``lines``, of which
    only those up to the second line of content are read; raises for an ambiguous first line."""
    # '#' starts a comment, as for the parser (np.loadtxt): comment lines are neither header nor data,
    # and a comment's commas say nothing of the delimiter (np.savetxt's header='costs, seed 1')
    content = [without_comment(line) for line in lines]
    first_index = next((i for i, line in enumerate(content) if line.strip()), None)
    if first_index is None:
        raise LapInputError(f"{name} holds no numbers")
    first = content[first_index]
    second_index = next((i for i in range(first_index + 1, len(lines)) if content[i].strip()), None)
    sample = first + "\n" + ("" if second_index is None else content[second_index])
    if delimiter == "\t" and "\t" not in sample:  # a .tsv's name, but another file's separator: said, not misread
        rows = sample.splitlines()[1 if header else 0:]  # (a header, --header says, may hold anything)

        def parts(separator):  # a line of numbers parted by it (not a header's one label 'cost, USD')
            return any(_parted_numbers(line, separator) for line in rows)
        other = next((f"'{d}'" for d in ",;" if parts(d)), "spaces" if parts(None) else None)
        decimal = other == "','" and all(_DECIMAL_COMMA.match(line) for line in rows if "," in line)
        if other:  # ('1,5' alone on its lines: two values, or one with a decimal comma)
            raise LapInputError(f"{name} is read tab-separated (.tsv), but its first lines hold no tab and part "
                                f"their values with {other}: name it {'.txt' if other == 'spaces' else '.csv'}"
                                + (", or write decimal points if they are decimal commas" if decimal else ""))
    if delimiter is None:  # from the first two lines: a header alone may hold no delimiter
        if header or (header is None and second_index is not None and not _numbers_line(first)):
            # a header's labels may hold any separator ('cost (a, b)' above spaced numbers; a title above
            # '1;2'): the first two lines of data decide
            third_index = next((i for i in range(second_index + 1, len(lines)) if content[i].strip()), None)
            sample = "\n".join(content[i] for i in (second_index, third_index) if i is not None)
        # a line without tabs whose spaces part numbers is whitespace-separated: both lines then are,
        # as np.loadtxt reads them ('3 1 2' above '1<tab>3<tab>2' was one field, taken for a header);
        # a header of words ('cost' above 'row 1<tab>5', pandas' one column) keeps the tabs
        spaced = any("\t" not in line and len(line.split()) > 1 and any(map(is_number, line.split()))
                     for line in sample.splitlines())
        delimiter = ("," if "," in sample else ("\t" if "\t" in sample and not spaced else None))
        if sample and all(";" in line for line in sample.splitlines()):  # semicolon-separated (commas: decimal?)
            delimiter = ";"
            if any(_DECIMAL_COMMA.match(field) for line in sample.splitlines() for field in line.split(";")):
                raise LapInputError(f"{name}: semicolon-separated with decimal commas ('1,5'); lapcli reads "
                                    "decimal points: convert the file (e.g. sed 's/,/./g')")
    fields = split_fields(first, delimiter)
    second_width = None if second_index is None else len(split_fields(content[second_index], delimiter))
    empty_first_label = len(fields) > 1 and not fields[0].strip() and any(f.strip() for f in fields[1:])
    if empty_first_label and not index_col and header is not False:
        raise LapInputError(_index_column_hint(name, "empty first header field"))
    guessed = header is None
    if guessed:  # after lapcli's own marker (lapcli.io.write) the first line is data, whatever it reads
        marked = any(line.strip() == DATA_FOLLOWS for line in lines[:first_index])
        header = False if marked else _first_line_is_header(fields, name, first_index + 1, index_col, second_width)
    notes = []
    if header and second_index is not None:  # the header's labels against the first row's fields
        labelled = without_comment(lines[first_index], labels=True)  # words above tabbed rows: spaced labels
        labels = _width(labelled, None if delimiter == "\t" and "\t" not in labelled else delimiter)
        width = _width(content[second_index], delimiter)
        # pandas with sep=" " or index_label=False, and R's write.table, write no empty first field to see
        one_short = not index_col and width == labels + 1
        why = f"line {first_index + 1} has {columns_text(labels)}, line {second_index + 1} has {width}"
        if one_short and guessed:
            raise LapInputError(_index_column_hint(name, why) + f", or --header if line {first_index + 1} is a title")
        if one_short:  # --header: a title, or labels beside an index column
            notes.append(f"{name}: {why}; if its first column labels the rows, pass --index-col")
        if width < labels and guessed:  # --header: a title of several words
            raise LapInputError(f"{name}: its header (line {first_index + 1}) has {labels} labels and line "
                                f"{second_index + 1} {columns_text(width)}; a header labels the columns (--header "
                                f"if line {first_index + 1} is a title)")
    return Layout(delimiter, header, guessed, first_index, second_index, first, fields, second_width, notes)


def without_comment(line: str, labels: bool = False) -> str:
    """``line`` up to its first '#' outside double quotes: a comment, as np.loadtxt's quotechar reads
    it. ``labels``: a header's, where a '#' inside a label (task#1) is no comment, only one that
    opens the line or follows a space or a delimiter (np.loadtxt skips the whole header line)."""
    if '"' not in line and not labels:
        return line.split("#", 1)[0]
    quoted = False
    for index, character in enumerate(line):
        if character == '"' and (quoted or _field_start(line, index)):
            quoted = not quoted
        elif character == "#" and not quoted and (not labels or _field_start(line, index)):
            return line[:index]
    return line


def unclosed_quote(line: str) -> bool:
    """Whether a quote opened at a field's start is still open at the line's end (np.loadtxt then
    reads the next line into that field)."""
    quoted = False
    for index, character in enumerate(line):
        if character == '"' and (quoted or _field_start(line, index)):
            quoted = not quoted
    return quoted


def _field_start(line: str, index: int) -> bool:
    """Whether ``line[index]`` opens a field: a quote there opens quoting (6" is six inches), a '#'
    there opens a header's comment."""
    return not index or line[index - 1] in " \t,;"


def _width(line: str, delimiter: str | None) -> int:
    """A header's labels or a row's fields, as a reader counts them: quoted ones whole (a label "job a"
    between spaces is one), a trailing delimiter's empty field not."""
    fields = split_fields(line, delimiter)
    while fields and not fields[-1].strip():
        fields.pop()
    return len(fields)


_EMPTY_QUOTED = re.compile(r'(?<!\S)""(?!\S)')  # a field written "" between spaces: empty, yet a field


def split_fields(line: str, delimiter: str | None) -> list[str]:
    """A line's fields as np.loadtxt's quotechar reads them: quoted ones whole and unquoted ("1" is
    a number, "job a" one label, "job"1 one field, "" an empty one); ``None``: runs of spaces or
    tabs between fields (csv's empty fields between them dropped, not an explicit "")."""
    if delimiter is None:
        if '"' not in line:
            return line.split()
        marked = _EMPTY_QUOTED.sub('"\x00"', line.replace("\t", " "))
        return [f.replace("\x00", "") for f in next(csv.reader([marked], delimiter=" "), []) if f]
    return next(csv.reader([line], delimiter=delimiter), [])


def is_number(text: str) -> bool:
    """Whether np.loadtxt reads ``text`` as a number: Python's float() also takes digit-group
    underscores and non-ASCII digits ('1_000', '４'), which np.loadtxt refuses; both take
    whitespace around it, a no-break space too."""
    text = text.strip()
    return "_" not in text and text.isascii() and _reads_as_float(text)


def _reads_as_float(text: str) -> bool:
    """Whether Python's float() reads ``text``: such a field is a number someone wrote, not a
    header's label, even where np.loadtxt does not read it ('1_000')."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def shorten(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def field_text(text: str) -> str:
    """What is wrong with a field that is no number, in words: empty (whitespace only), a quoted
    number after spaces (np.loadtxt reads a quote only where it opens the field), numbers parted by
    spaces inside it ('10 2<tab>3': two separators, or '1 500' digit groups, not guessed), or its text."""
    shown = text.strip()
    if _spaced_quote(text):
        return f"{shown!r} is a quoted number after a space, and a quote must open its field ({shown} right " \
               f"after the delimiter, or {shown[1:-1]})"
    if _parted_numbers(text, None):
        return f"{shown!r} is not a number: spaces part numbers inside one field (two separators, or digit " \
               "groups?); use one separator"
    return f"{shown!r} is not a number" if shown else "an empty field"


def _numbers_line(line: str) -> bool:
    """Whether ``line`` holds numbers alone, parted by some delimiter (commas, tabs, semicolons or
    spaces): a line of data, not a header's labels."""
    return any(all(map(is_number, fields)) for fields in (line.split(d) for d in (",", "\t", ";", None)) if fields)


def _parted_numbers(text: str, separator: str | None) -> bool:
    """Whether ``text`` is two numbers or more parted by ``separator`` (None: spaces)."""
    fields = text.split(separator)
    return len(fields) > 1 and all(map(is_number, fields))


def _spaced_quote(text: str) -> bool:
    shown = text.strip()
    return text != text.lstrip() and len(shown) > 2 and shown[0] == shown[-1] == '"' and is_number(shown[1:-1])


def columns_text(count: int) -> str:
    return f"{count} column" + ("" if count == 1 else "s")


def _index_column_hint(name: str, why: str) -> str:
    return f"{name} looks like it has an index column ({why}); pass --index-col to drop it"


def _first_line_is_header(fields: list[str], name: str, line_number: int, index_col: bool,
                          next_width: int | None) -> bool:
    if index_col and (not fields[0].strip() or next_width == len(fields) + 1):
        return True  # pandas' header: an empty index name (or none at all with sep=" "), then the labels
    offset = 1 if index_col else 0
    labels = fields[offset:]
    if not any(map(_reads_as_float, labels)):  # words only ('1_000' is a number, if not NumPy's)
        return True
    bad = next((i for i, label in enumerate(labels) if not is_number(label)), None)
    if bad is not None:  # a word beside numbers, or a number NumPy cannot read
        names_row = bad == 0 and not index_col and len(labels) > 1 and all(map(is_number, labels[1:]))
        hint = ("" if _spaced_quote(labels[bad]) or _parted_numbers(labels[bad], None)
                else f" (pass --index-col if its first column names the rows, or --header if line {line_number} is a "
                     "header)" if names_row
                else f" (use --header if line {line_number} is a header)"
                if labels[bad].strip() else " (a trailing delimiter?)" if bad == len(labels) - 1
                else " (a delimiter twice?)")
        raise LapInputError(f"{name} line {line_number}, column {bad + offset + 1}: {field_text(labels[bad])}{hint}")
    if next_width is not None and [label.strip() for label in labels] == [str(i) for i in range(len(labels))]:
        raise LapInputError(
            f"{name} line {line_number} ({shorten(','.join(labels), 40)}) could be pandas' default column "
            "labels or data; pass --header or --no-header"
        )
    return False
