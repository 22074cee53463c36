"""The ``lap`` process: start the CUDA driver early when the command will need it, run the command
line (lapcli/cli/main.py), and leave the CUDA context's teardown to a child (lapcli/cli/gpu_start.py).

Kept apart from cli/main.py, which imports NumPy: the early start must begin before that import."""

from __future__ import annotations

import os
import signal
import sys


def _terminated_early(signum, frame):
    """SIGTERM during the imports, before cli_main's own handler (lapcli.cli.main.raise_terminated):
    its line and code, at once. No exception: one raised inside the import machinery may be
    swallowed or wrapped, and nothing is written yet that an unwinding would have to remove."""
    try:
        os.write(2, b"lap: terminated\n")
    finally:
        os._exit(128 + signum)


def main() -> None:
    try:
        previous = signal.signal(signal.SIGTERM, _terminated_early)
    except ValueError:  # not the main thread: leave signals alone
        previous = None
    try:
        from .cli import gpu_start

        gpu_start.start_early(sys.argv[1:])
        from .cli.main import main as cli_main  # imports NumPy, Click, Rich: ~0.1 s a signal may land in
    except KeyboardInterrupt:  # before cli_main's own handler: the same line and code, no traceback
        if sys.stderr is not None:
            sys.stderr.write("lap: interrupted\n")
        sys.exit(130)
    finally:
        if previous is not None:  # the imports are done: cli_main installs its own
            signal.signal(signal.SIGTERM, previous)
    try:
        cli_main()
    finally:
        try:
            gpu_start.detach_teardown()
        except BaseException:  # noqa: BLE001 - the command's own exit (code, output) comes first
            pass


if __name__ == "__main__":
    main()
