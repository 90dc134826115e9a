"""Where a run's history keeps its framed records: an unnamed temporary file.

Owns ``FileFrames``, the ``FrameStore`` (``loadtest.model.history.log``) a run's
logs use, so the compressed frames of what was sent, invoked and acknowledged
leave the harness's memory as the run goes. The file has no name (it is gone
when closed or when the process ends) and is not the run's log directory,
which the history outlives. A run given a history file keeps its frames in
that file instead (``loadtest.engine.recording``), so a kill leaves them. It
must not know what a frame holds.
"""

from __future__ import annotations

import tempfile
import weakref
from typing import IO


class FileFrames:
    """Frames appended to one temporary file, read back by position.

    The file is created with the first frame (a short log never opens one) and
    closed when the store is collected. Not safe across threads: a read seeks.
    """

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._spans: list[tuple[int, int]] = []
        """Each frame's offset and length (in bytes)."""
        self._end = 0

    def append(self, frame: bytes, /) -> None:
        if self._file is None:
            self._file = tempfile.TemporaryFile()  # noqa: SIM115  # closed by the finalizer
            weakref.finalize(self, self._file.close)
        self._file.seek(self._end)
        self._file.write(frame)
        self._spans.append((self._end, len(frame)))
        self._end += len(frame)

    def __getitem__(self, index: int, /) -> bytes:
        offset, length = self._spans[index]
        assert self._file is not None  # a span exists, so the file does
        self._file.seek(offset)
        return self._file.read(length)

    def __len__(self) -> int:
        return len(self._spans)
