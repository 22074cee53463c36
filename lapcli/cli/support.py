"""What every `lap` command shares: error classes with their exit codes, one-line usage errors,
and the stderr console for people."""

from __future__ import annotations

import math
import os
import re
from decimal import Decimal, InvalidOperation

import click

from ..engines.registry import solver_choices
from ..errors import (
    InfeasibleError,
    LapInputError,
    LapOutputError,
    LapTypeError,
    SolverError,
    SolverUnavailable,
)
from ..io.formats import split_hdf5_path
from ..io.targets import is_stdin_file, same_output, stdout_alias
from ..io.write import json_text, write_together


class ClosedStdout:
    """What ``sys.stdout`` becomes where file descriptor 1 was closed before lapcli started (Python
    leaves None): any write is a broken pipe, which main() turns into exit 1 without a word, as for
    a reader that went away (``| head``)."""

    encoding = "utf-8"

    @property
    def buffer(self):
        return self

    def write(self, data):
        raise BrokenPipeError(32, "stdout is closed")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:  # Rich, on a broken pipe, points descriptor 1 at /dev/null and exits 1
        return 1

    def isatty(self) -> bool:
        return False


class MessagesStderr:
    """``sys.stderr`` for people's messages: a write its descriptor refuses (a full disk behind
    ``2>file``, a reader of ``2>&1 |`` gone) drops the messages from then on, not the run, whose data
    and exit code stay its own (an unwritten summary after the outputs were written made it exit 1,
    and bad input's one line exit 1, not 2)."""

    def __init__(self, stream):  # (None: descriptor 2 was closed; Click would print its errors on stdout)
        self.stream = stream if stream is not None else open(os.devnull, "w")  # noqa: SIM115 - stderr until exit

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except (OSError, ValueError):
            self._drop()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            self._drop()

    def _drop(self) -> None:  # what the stream held is dropped too: Python's exit would flush it again
        self.stream = open(os.devnull, "w")  # noqa: SIM115 - it is the process's stderr until exit

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


class ClosedStdin:
    """What ``sys.stdin`` becomes where file descriptor 0 was closed: reading it is bad input."""

    @property
    def buffer(self):
        return self

    def read(self, size: int = -1):
        raise LapInputError("stdin is closed: nothing to read from '-'")

    def isatty(self) -> bool:
        return False


class OneLineError(click.ClickException):
    """An error's one line: a character that would break it or drive the terminal (a newline or an
    escape sequence in a file name) is shown escaped, as Python writes it in a string."""

    def format_message(self) -> str:
        return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in self.message)


class InputError(OneLineError):
    """Bad input or options: exit code 2."""

    exit_code = 2


class FailedError(OneLineError):
    """No answer (infeasible, solver failure): exit code 1."""

    exit_code = 1


class FiniteFloatRange(click.FloatRange):
    """click.FloatRange that also refuses nan and ±inf (FloatRange lets nan through: every
    comparison with nan is False, so no bound ever fails)."""

    def convert(self, value, param, ctx):
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return super().convert(number, param, ctx)

    def _describe_range(self) -> str:
        """Click's help writes an unbounded range as ``x<=None``: say what it is instead."""
        return "finite" if self.min is None and self.max is None else super()._describe_range()


class ExactNumber(FiniteFloatRange):
    """A finite number, kept an exact int where its text is an integer (``9007199254740995``,
    ``9_007_199_254_740_995.0``, ``9.007199254740995e15``, ``1e400``: up to 4300 digits): an integral
    limit beside integer costs past 2^53 stays exact, as the library takes it (a float rounds it). A
    fraction that float64 drops (``9007199254740995.5`` reads as the integer 9007199254740996.0, a
    limit a cost that large then meets; ``1e-400`` reads as 0.0) is refused; other fractions are
    floats, as float costs read them."""

    def convert(self, value, param, ctx):
        if not isinstance(value, str):
            return super().convert(value, param, ctx)
        try:
            float(value)  # Python's spellings of a number only (Decimal takes "_5" and "1__0" too)
            written = Decimal(value.strip())
        except ValueError:
            return super().convert(value, param, ctx)  # click's "is not a valid float"
        except InvalidOperation:  # an exponent past Decimal's own range: 0 or infinite as a float
            written = None
        if written is not None and written.is_finite() and written == written.to_integral_value():
            if written.adjusted() >= 4300:  # past float64 by far, as 1e400 is
                self.fail("an integer of more than 4300 digits is not a finite number", param, ctx)
            return int(written)
        number = super().convert(value, param, ctx)
        dropped = (re.search(r"[1-9]", value.lower().split("e")[0]) is not None if written is None
                   else number.is_integer() or math.floor(number) != math.floor(written))
        if dropped:
            shown = value.strip() if len(value.strip()) <= 40 else value.strip()[:37] + "..."
            self.fail(f"{shown} reads as {number!r} in float64, which drops its fraction; give a limit float64 "
                      "holds, or its integer part", param, ctx)
        return number


LOG_WIDTH = 200  # columns when the stream is a file or pipe: Rich would wrap tables at 80


class SilentConsole:
    """What ``--quiet`` gets instead of a Rich console: it prints nothing, and Rich is never
    imported (~40 ms of a one-shot solve on the H100 machine)."""

    quiet = True
    is_terminal = False

    def print(self, *args, **kwargs) -> None:
        pass


def stderr_console(quiet: bool = False, stderr: bool = True):
    """Rich console for people (stderr by default); as wide as the terminal, or LOG_WIDTH columns
    when writing to a log file or pipe, so that tables are not wrapped at 80 columns there."""
    if quiet:
        return SilentConsole()
    from rich.console import Console

    console = Console(stderr=stderr, quiet=quiet, highlight=False, emoji=False)  # ":smile:.csv" is a file name
    if not console.is_terminal:
        console.width = LOG_WIDTH
    return console


def run_library_call(function, *args, **kwargs):
    """Turn the library's exceptions into one-line CLI errors with the right exit code. Only
    lapcli's own input errors are "bad input" (exit 2); a closed stdout (``| head``) goes on to
    main(), which exits 1 without a word; anything else raised inside is a bug of lapcli or an
    engine: exit 1, one line saying so (LAPCLI_TRACEBACK=1 shows the traceback)."""
    try:
        return function(*args, **kwargs)
    except BrokenPipeError:
        raise
    except InfeasibleError as error:
        raise FailedError(str(error)) from None
    except LapOutputError as error:  # a full disk, a quota, an I/O error: no answer written, not a bug
        raise FailedError(str(error)) from None
    except (LapInputError, LapTypeError, SolverUnavailable) as error:  # an engine this machine lacks: an option
        raise InputError(str(error)) from None  # it cannot serve, as for `lap bench`
    except SolverError as error:
        raise FailedError(str(error)) from None
    except MemoryError as error:  # what did not fit, where lapcli or NumPy says
        raise FailedError(f"out of host memory: {error}" if str(error) else "out of host memory") from None
    except click.ClickException:
        raise
    except Exception as error:  # noqa: BLE001 - a bug, reported as one
        if os.environ.get("LAPCLI_TRACEBACK"):
            raise
        raise FailedError(f"internal error ({type(error).__name__}: {error}); this is a bug, please "
                          "report it (LAPCLI_TRACEBACK=1 shows the traceback)") from None


# Click 8.2 and later raise it for a bare ``lap`` (no command); 8.1 prints the help itself
NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())


class OneLineUsage:
    """Report Click's parse errors (bad option values, missing arguments) as one line, exit 2; a
    bare ``lap`` gets its help on stderr, exit 2 (Click's code), without an "Error:" line."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as error:
            if isinstance(error, NO_ARGS_IS_HELP):
                click.echo(error.ctx.get_help(), err=True)
                raise click.exceptions.Exit(2) from None
            path = f"{parent.command_path} {info_name}" if parent else (info_name or "lap")
            raise InputError(f"{error.format_message()} (see '{path} --help')") from None

    def resolve_command(self, ctx, args):
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as error:
            raise InputError(f"{error.format_message()} (see '{ctx.command_path} --help')") from None


class OneLineCommand(OneLineUsage, click.Command):
    pass


class Interrupted(BaseException):
    """Ctrl-C inside a command, carried past Click's main, which would print a blank line first."""


class OneLineGroup(OneLineUsage, click.Group):
    command_class = OneLineCommand
    reports_interrupts = False  # lapcli.cli.main.main's run: it says "lap: interrupted" itself

    def main(self, *args, standalone_mode: bool = True, **kwargs):
        self.reports_interrupts = not standalone_mode  # Click's own runs (CliRunner) keep its Abort
        try:
            return super().main(*args, standalone_mode=standalone_mode, **kwargs)
        finally:
            self.reports_interrupts = False

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            if not self.reports_interrupts:
                raise
            raise Interrupted() from None


def announce_input(spec, notes, several, console) -> None:
    """On stderr, ahead of an input's summary: its name (several inputs) and the reader's notes."""
    if several:
        from rich.markup import escape

        console.print(f"[bold]{escape(spec)}[/]", markup=True, highlight=False)
    for note in notes:
        console.print(note, markup=False, emoji=False, soft_wrap=True)


class Outputs:
    """The files of one answer (the assignment, the duals, the report, the JSON on stdout), gathered
    as they are made and written together (lapcli.io.write.write_together) once all are known:
    where one cannot be written (a full disk, a quota) none is, and no file there before is
    replaced."""

    def __init__(self):
        self.pending: list[tuple[str, bytes]] = []

    def add(self, path: str, data: bytes) -> None:
        self.pending.append((path, data))

    def write(self) -> None:
        pending, self.pending = self.pending, []
        run_library_call(write_together, pending)


def emit_report(spec, report, notes, several, report_path, json_stdout, outputs: Outputs, console) -> None:
    """One input's answer delivered: its JSON report to --report and/or stdout (one compact line
    each when several) written with the files already in ``outputs``, then its summary on stderr,
    once every file is written."""
    from ..report import render_batch_summary, render_summary

    report.notes.extend(notes)
    payload = {"input": spec} | report.to_dict()
    report_json = json_text(payload, indent=None if several else 2) + "\n"
    if report_path is not None:
        outputs.add(report_path, report_json.encode())
    if json_stdout:
        outputs.add("-", report_json.encode())
    outputs.write()
    if report.batch is None:
        render_summary(report, console, announced=notes)  # announce_input said the reader's notes
    else:
        render_batch_summary(report, console)


def check_distinct_outputs(*outputs: tuple[str, str | None], inputs=(), json_stdout: bool = False) -> None:
    """Refuse two options naming one output (``-o r.json --report r.json``; two on stdout, ``--json``
    among them: two documents one after the other), or an output naming an input (``lap solve m.npy
    -o m.npy``), before any work: the file written last would silently replace the other, or the
    costs. ``outputs``: (flag, path or None); ``inputs``: the input specs (``FILE.h5:/path`` names
    FILE.h5; ``-`` is stdin); ``json_stdout``: --json prints the report on stdout."""
    given = [(flag, path) for flag, path in (*outputs, ("--json", "-" if json_stdout else None)) if path is not None]
    for index, (flag, path) in enumerate(given):
        for other, other_path in given[index + 1:]:
            if same_output(path, other_path):
                where = "stdout" if path == "-" else path
                raise InputError(f"{flag} and {other} both write to {where}; give each its own file")
        for spec in inputs:
            read_from = split_hdf5_path(spec)[0]
            if path != "-" and (is_stdin_file(path) if spec == "-" else same_output(path, read_from)):
                read_from = "on stdin" if spec == "-" else read_from
                raise InputError(f"{flag} {path} would overwrite the input {read_from}; write elsewhere")


def stdout_by_name(ctx, param, value: str | None) -> str | None:
    """A click callback: an output named ``/dev/stdout`` (or another name of descriptor 1, without an
    extension) is ``-``, written as ``-`` is (NPY from ``lap generate``), not as a file without one."""
    return "-" if value and not os.path.splitext(value)[1] and stdout_alias(value) else value


def input_name(spec: str) -> str:
    """An INPUT as messages name it: ``stdin`` for ``-``."""
    return "stdin" if spec == "-" else spec


def named_by_input(spec: str, message: str) -> str:
    """One of several inputs' error, its input named once: not where its own words name it, first
    or later ("cannot parse stdin: …" read "stdin: cannot parse stdin: …")."""
    name = input_name(spec)
    return message if re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", message) else f"{name}: {message}"


def check_rank_options(spec: str, rank: int | None, solver: str, duals_path, cost_limit) -> None:
    """Refuse what a matrix or a stack cannot take, before work; ``rank`` None: not known yet (stdin)."""
    name = input_name(spec)
    if rank is None:
        return
    if rank == 3:  # a 3-D array, or an NPZ archive or HDF5 group of 2-D ones
        held = f"{name} is 3-D (a stack of matrices)" if spec.lower().endswith(".npy") else \
            f"{name} holds a stack of problems (a 3-D array or several 2-D ones)"
        for flag, value in (("--duals", duals_path), ("--cost-limit", cost_limit)):
            if value is not None:
                raise InputError(f"{flag} is not supported for stacks: {held}")
        if solver not in solver_choices(batch=True):
            raise InputError(f"solver {solver!r} solves one problem at a time; {held}: "
                             f"use {', '.join(solver_choices(batch=True))}")
    elif rank == 2:
        if solver != "auto" and solver not in solver_choices(batch=False, matrix=True):
            what = "solves stacks" if solver in solver_choices(batch=True) else "matches point sets (--points A B)"
            raise InputError(f"solver {solver!r} {what}; {name} is one matrix (2-D): "
                             f"use {', '.join(solver_choices(batch=False, matrix=True))}")
    else:
        raise InputError(f"{name} is {rank}-D: expected a matrix (2-D) or a stack of matrices (3-D)")


def write_solution(solution, output, duals_path, outputs: Outputs) -> None:
    """One solved problem's files, added to ``outputs``: the assignment to ``output``, the duals to
    ``duals_path`` (FailedError when the engine gave none). The caller writes them with the report
    and then prints the summary."""
    from ..io.write import assignment_bytes, duals_bytes

    report = solution.report
    if duals_path is not None and solution.duals is None:
        raise FailedError(f"--duals: solver {report.solver} gives no duals")
    # both files' bytes before either is written: a refusal leaves no file behind
    duals = run_library_call(duals_bytes, duals_path, *solution.duals) if duals_path is not None else None
    if output is not None:
        outputs.add(output, assignment_bytes(output, solution.row_ind, solution.col_ind, report.n_rows))
    if duals is not None:
        outputs.add(duals_path, duals)
