"""The ``lap`` process: start the CUDA driver early when the command will need it, run the command
line (lapcli/cli/main.py), and leave the CUDA context's teardown to a child (lapcli/cli/gpu_start.py).

Kept apart from cli/main.py, which imports NumPy: the early start must begin before that import."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from .cli import gpu_start

        gpu_start.start_early(sys.argv[1:])
        from .cli.main import main as cli_main  # imports NumPy, Click, Rich: ~0.1 s a Ctrl-C may land in
    except KeyboardInterrupt:  # before cli_main's own handler: the same line and code, no traceback
        if sys.stderr is not None:
            sys.stderr.write("lap: interrupted\n")
        sys.exit(130)
    try:
        cli_main()
    finally:
        try:
            gpu_start.detach_teardown()
        except BaseException:  # noqa: BLE001 - the command's own exit (code, output) comes first
            pass


if __name__ == "__main__":
    main()
