"""Where the ``lap`` process tells the CUDA runtime that it started the driver early (in a thread,
while Python imports: lapcli.cli.gpu_start). The library only reads these hooks; by default there
is no early start. No imports: the entry point installs its hooks before NumPy loads.
"""


class NoEarlyStart:
    """The hooks when nothing was started early (the library's default)."""

    @staticmethod
    def wait() -> None:
        """Return once an early start (if any) has finished: a launcher calls this before cuInit."""

    @staticmethod
    def note_context(ordinal: int = 0) -> None:
        """A launcher made a CUDA context in this process (on device ``ordinal``)."""

    @staticmethod
    def started_early() -> bool:
        """Whether this process began initialising the driver before NumPy's import."""
        return False


class _Hooks:
    """Forwards to the installed hooks (a module or object with NoEarlyStart's three functions)."""

    installed = NoEarlyStart

    def wait(self) -> None:
        self.installed.wait()

    def note_context(self, ordinal: int = 0) -> None:
        self.installed.note_context(ordinal)

    def started_early(self) -> bool:
        return self.installed.started_early()


hooks = _Hooks()


def install(early) -> None:
    """Called by the ``lap`` entry point with its early start (wait, note_context, started_early)."""
    hooks.installed = early
