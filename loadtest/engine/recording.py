"""A run's durable history: its records appended to a named file as the run goes.

Owns ``HistoryWriter`` (``loadtest run --history PATH``): the file is opened,
and its header and the run's meta (the plan, the command, the loadtest version
and commit) written, before anything of the run is created; each variant run's
logs keep their compressed frames in it (``F`` records, read back by position:
the file is also the run's spool); every ``FLUSH_S`` a background task writes
the rows not yet framed (``R``) and a checkpoint of the runs' clocks (``C``),
then ``fsync``s; a variant run's end state and the rest of what judged it
(``E``) and the run's close (``Z``) are written as they happen. A deployed run
(``loadtest.deploy.remote_run``) also writes what it learns as it learns it: each
batch of observation lines it drains (``O``) and each dead letter it finds
(``D``), so a history cut before its ``E`` is rebuilt from them. The bytes are
``loadtest.model.history.journal``'s; reading them back is ``replay``'s.

A write that fails (``ENOSPC``, ``EIO``) is said once through ``on_problem``
and the run goes on without the history: from then on its frames stay in
memory, and the file holds what was written before, readable as a cut history.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from loadtest.errors import InputError
from loadtest.model.history import journal
from loadtest.model.history.log import FRAME_RECORDS, History, RecordLog

if TYPE_CHECKING:
    from loadtest.aws import clients as aws
    from loadtest.emulation.environment.handlers import HandlerRef
    from loadtest.engine.results import VariantRun

FLUSH_S = 1.0
"""How often (in seconds) the rows not yet framed reach the file, and the file the disk."""


class HistoryPathError(InputError):
    """A history file that cannot be created or written at the start (exit 2)."""


class Sink(Protocol):
    """Where a history's bytes go: a file by default (a test passes one that fails)."""

    def write(self, data: bytes, /) -> None:
        """Append all of ``data`` or raise ``OSError``."""

    def sync(self) -> None: ...

    def read(self, offset: int, length: int, /) -> bytes: ...

    def close(self) -> None: ...


class FileSink:
    """A history file opened for appending, read back by position."""

    def __init__(self, path: Path) -> None:
        flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        self.fd = os.open(path, flags, 0o644)

    def write(self, data: bytes, /) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]

    def sync(self) -> None:
        os.fsync(self.fd)

    def read(self, offset: int, length: int, /) -> bytes:
        return os.pread(self.fd, length, offset)

    def close(self) -> None:
        os.close(self.fd)


def check_history_path(path: Path) -> None:
    """Refuse, before anything is created, a history path that cannot be written."""
    folder = path.parent
    if path.is_dir():
        raise HistoryPathError(f"cannot write history {str(path)!r}: it is a directory")
    if not folder.is_dir():
        raise HistoryPathError(
            f"cannot write history {str(path)!r}: the directory {str(folder)!r} does not exist"
        )
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise HistoryPathError(f"cannot write history {str(path)!r}: permission denied")


def loadtest_commit() -> str:
    """The git commit of the checkout loadtest runs from, or "" when it is not run from one
    (an installed package inside another project's repository names no commit of its own)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return ""
    try:
        found = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return found.stdout.strip() if found.returncode == 0 else ""


class _LogFrames:
    """One log's frames: ``F`` records in the history file, or in memory once it failed."""

    def __init__(self, writer: HistoryWriter, run: int, log: int) -> None:
        self._writer = writer
        self._run = run
        self._log = log
        self._frames: list[tuple[int, int] | bytes] = []

    def append(self, frame: bytes, /) -> None:
        record, start = journal.frame(self._run, self._log, len(self._frames), frame)
        offset = self._writer.write(record)
        self._frames.append(frame if offset is None else (offset + start, len(frame)))

    def __getitem__(self, index: int, /) -> bytes:
        kept = self._frames[index]
        if isinstance(kept, bytes):
            return kept
        return self._writer.read(*kept)

    def __len__(self) -> int:
        return len(self._frames)


@dataclasses.dataclass
class _Open:
    """A variant run being written: its history and how many rows of each log are in the file."""

    history: History
    stores: dict[str, _LogFrames]
    durable: list[int]


class HistoryWriter:
    """A run's history file (see the module's docstring); one task (the run's) appends to it."""

    def __init__(
        self,
        path: Path,
        meta: Mapping[str, Any],
        *,
        sink: Sink | None = None,
        on_problem: Callable[[str], None] | None = None,
        clock: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        """Create the file and write its header and ``meta``; ``HistoryPathError`` if it cannot be."""
        self.path = path
        self.problem: str | None = None
        """Why the history stopped being written (None while it is)."""
        self.closed = False
        self._on_problem = on_problem
        self._clock = clock
        self._runs: dict[int, _Open] = {}
        try:
            self._sink: Sink = sink if sink is not None else FileSink(path)
        except OSError as exc:
            raise HistoryPathError(f"cannot write history {str(path)!r}: {exc}") from exc
        self._end = 0
        try:
            self._put(journal.HEADER + journal.values(journal.META, journal.plain(meta)))
            self._sink.sync()
        except OSError as exc:
            self._sink.close()
            raise HistoryPathError(f"cannot write history {str(path)!r}: {exc}") from exc
        weakref.finalize(self, _close_quietly, self._sink)

    def _put(self, data: bytes) -> int:
        offset = self._end
        self._sink.write(data)
        self._end += len(data)
        return offset

    def write(self, data: bytes) -> int | None:
        """Append one record; where it starts, or None when the history is no longer written."""
        if self.problem is not None:
            return None
        try:
            return self._put(data)
        except OSError as exc:
            self._fail(exc)
            return None

    def read(self, offset: int, length: int) -> bytes:
        return self._sink.read(offset, length)

    def _fail(self, exc: OSError) -> None:
        self.problem = (
            f"the history {str(self.path)!r} could not be written ({exc.strerror or exc}); "
            "the run goes on without it (the file holds what was written before, a cut history)"
        )
        if self._on_problem is not None:
            self._on_problem(self.problem)

    def backend(self, target: aws.Target) -> None:
        """The run's backend, once it is known (an embedded one's address is picked at its start)."""
        self.write(
            journal.values(
                journal.BACKEND, {"kind": target.kind.value, "endpoint_url": target.endpoint_url}
            )
        )

    def history(
        self,
        run: int,
        ref: HandlerRef,
        names: aws.ResourceNames,
        cell: int,
        *,
        collect: Mapping[str, Any] | None = None,
    ) -> History:
        """A variant run's history, its logs kept in this file; writes the run's ``V`` record
        (``collect``: how a deployed run's lines are read back, see ``collecting``)."""
        start = {
            "run": run,
            "variant": ref.variant,
            "module": ref.module,
            "path": ref.path,
            "function": ref.function,
            "cell": cell,
            "resources": dataclasses.asdict(names),
        }
        if collect is not None:
            start["collect"] = dict(collect)
        self.write(journal.values(journal.VARIANT, journal.plain(start)))
        stores = {name: _LogFrames(self, run, i) for i, name in enumerate(journal.LOGS)}
        history = History(stores=stores.__getitem__)
        self._runs[run] = _Open(history, stores, [0] * len(journal.LOGS))
        return history

    def collecting(
        self,
        run: int,
        ref: HandlerRef,
        names: aws.ResourceNames,
        *,
        partial: bool,
        wall_offset_ns: int,
    ) -> History:
        """A deployed variant run's history: its ``V`` record says how its lines are collected
        (``partial``: the mapping reports batch item failures; ``wall_offset_ns``: the
        wall clock minus the monotonic one, in ns), as ``Collector`` takes them."""
        return self.history(
            run, ref, names, 0, collect={"partial": partial, "wall_offset_ns": wall_offset_ns}
        )

    def lines(self, run: int, bodies: list[str]) -> None:
        """Observation lines a deployed run drained, in the order it read them (``O``), after
        the rows not yet in the file: the messages they speak of are known before them."""
        if bodies and self.problem is None:
            self._flush_rows()
            self.write(journal.values(journal.LINES, {"run": run, "lines": list(bodies)}))

    def dead_letter(self, run: int, message_id: str, receive_count: int, seen_ns: int) -> None:
        """A dead letter a deployed run found (``D``): seen at ``seen_ns`` (monotonic)."""
        if self.problem is not None:
            return
        self._flush_rows()
        self.write(
            journal.values(
                journal.DEAD_LETTER,
                {
                    "run": run,
                    "message_id": message_id,
                    "receive_count": receive_count,
                    "seen_ns": seen_ns,
                },
            )
        )

    def ended(
        self,
        run: int,
        variant_run: VariantRun,
        *,
        cut_short: bool,
        backlog_peak: int,
        stopped_early: str | None,
    ) -> None:
        """A variant run's end: its last rows, then what judged it besides its records."""
        self._flush_rows()
        history = variant_run.history
        self.write(
            journal.values(
                journal.ENDED,
                journal.plain(
                    {
                        "run": run,
                        "started_ns": history.started_ns,
                        "ended_ns": history.ended_ns,
                        "timed_out": history.timed_out,
                        "end_state": journal.encode_end_state(variant_run.end_state),
                        "cold_starts": variant_run.cold_starts,
                        "cleanup_problems": list(variant_run.cleanup_problems),
                        "incomplete": variant_run.incomplete,
                        "cut_short": cut_short,
                        "backlog_peak": backlog_peak,
                        "stopped_early": stopped_early,
                        "warnings": list(variant_run.warnings),
                        "sqs_requests_served": variant_run.sqs_requests_served,
                    }
                ),
            )
        )
        self._runs.pop(run, None)

    def _flush_rows(self) -> None:
        for run, state in self._runs.items():
            logs: tuple[RecordLog[Any], ...] = (
                state.history.sent,
                state.history.invocations,
                state.history.acks,
                state.history.dead_letters,
            )
            for i, log in enumerate(logs):
                framed = len(state.stores[journal.LOGS[i]]) * FRAME_RECORDS
                durable = max(state.durable[i], framed)
                count = len(log)
                if count > durable:
                    self.write(journal.rows(run, i, durable, list(log.rows(durable, count))))
                state.durable[i] = count

    def flush(self) -> None:
        """The rows not yet framed and a checkpoint of the runs' clocks, into the file."""
        if self.problem is not None or self.closed:
            return
        self._flush_rows()
        self.write(
            journal.values(
                journal.CHECKPOINT,
                {
                    "at_ns": self._clock(),
                    "at_s": time.time(),
                    "runs": {
                        run: (s.history.started_ns, s.history.ended_ns, s.history.timed_out)
                        for run, s in self._runs.items()
                    },
                },
            )
        )

    def sync(self) -> None:
        """The file's bytes onto the disk (safe beside the run's own writes)."""
        if self.problem is not None or self.closed:
            return
        try:
            self._sink.sync()
        except OSError as exc:
            self._fail(exc)

    @asynccontextmanager
    async def flushing(self, interval_s: float = FLUSH_S) -> AsyncIterator[None]:
        """Flush (and ``fsync``, in a worker thread) every ``interval_s`` while the body runs."""

        async def every() -> None:
            while True:
                await anyio.sleep(interval_s)
                self.flush()
                await anyio.to_thread.run_sync(self.sync)

        async with anyio.create_task_group() as tg:
            tg.start_soon(every)
            try:
                yield
            finally:
                tg.cancel_scope.cancel()

    def close(self, incomplete: str | None) -> None:
        """The run ended: its close record (``incomplete``: why it stopped early), then the disk.

        The file stays open for reading the runs' frames until the writer is collected.
        """
        if self.closed:
            return
        self.flush()
        self.write(journal.values(journal.CLOSED, {"incomplete": incomplete}))
        self.sync()
        self.closed = True


def _close_quietly(sink: Sink) -> None:
    with suppress(OSError):
        sink.close()


__all__ = [
    "FLUSH_S",
    "FileSink",
    "HistoryPathError",
    "HistoryWriter",
    "Sink",
    "check_history_path",
    "loadtest_commit",
]
