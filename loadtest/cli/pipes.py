"""Standard output and error whose reader has gone: what is written there is dropped.

``loadtest run ... | head -1`` closes the pipe after one line. Python ignores
SIGPIPE, so the next write raises ``BrokenPipeError``; click then exits 1, and
the interpreter's last flush can print a traceback. ``git`` and ``k6`` die of
SIGPIPE instead (exit 141 in a shell with ``pipefail``). For loadtest the exit
code is the verdict a CI job gates on, so neither will do: the command runs to
its end, its report files are written, its exit code is the verdict's, and
what it prints after the reader left goes nowhere.

``guard_standard_streams`` (called once by ``loadtest.cli.app.main``, never by
the library) puts each stream on a writer that, at the first broken pipe,
points the descriptor at ``/dev/null`` (so later writes by anything holding
the descriptor, the interpreter's exit flush included, succeed) and reports the
bytes as written. Python's own advice (the note on SIGPIPE in the ``signal``
module's documentation) is the same redirection, there followed by exit 1.
"""

from __future__ import annotations

import io
import os
import sys
from typing import TextIO


class _DropWhenClosed(io.RawIOBase):
    """A descriptor's writer that turns a reader's departure into ``/dev/null``."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: object) -> int:
        view = memoryview(data)  # type: ignore[arg-type]
        try:
            return os.write(self._fd, view)
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._fd)
            finally:
                os.close(devnull)
            return view.nbytes


def _guarded(stream: TextIO | None) -> TextIO | None:
    if stream is None:
        return None
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return stream  # not a descriptor (a test's capture): nothing to guard
    stream.flush()
    return io.TextIOWrapper(
        io.BufferedWriter(_DropWhenClosed(fd)),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=bool(stream.line_buffering),
    )


def guard_standard_streams() -> None:
    """Put ``sys.stdout`` and ``sys.stderr`` on writers that survive a closed reader."""
    stdout, stderr = _guarded(sys.stdout), _guarded(sys.stderr)
    if stdout is not None:
        sys.stdout = stdout
    if stderr is not None:
        sys.stderr = stderr
