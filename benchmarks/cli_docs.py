"""Regenerate the `--help` blocks of docs/cli.md from the CLI itself (the notes are hand-written).

    python benchmarks/cli_docs.py          # rewrite docs/cli.md in place
    python benchmarks/cli_docs.py --check  # exit 1 when docs/cli.md is out of date

Width 78: what Click prints on an 80-column terminal.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from click.testing import CliRunner

from lapcli.cli.main import cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
COMMANDS = ("generate", "solve", "bench", "info")


def regenerated(doc: str) -> str:
    for command in COMMANDS:
        help_text = CliRunner().invoke(cli, [command, "--help"], prog_name="lap", terminal_width=78).output
        block = re.compile(rf"(## lap {command}\n\n```\n)(.*?)(```)", re.S)
        if not block.search(doc):
            raise SystemExit(f"{DOC}: no ```-block under '## lap {command}'")
        doc = block.sub(lambda match: match.group(1) + help_text + match.group(3), doc)
    return doc


def main() -> None:
    current = DOC.read_text()
    new = regenerated(current)
    if "--check" in sys.argv[1:]:
        if new != current:
            raise SystemExit(f"{DOC} is out of date: run python benchmarks/cli_docs.py")
        return
    DOC.write_text(new)


if __name__ == "__main__":
    main()
