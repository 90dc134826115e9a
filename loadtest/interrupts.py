"""Termination signals: SIGINT, SIGTERM and SIGHUP all take Ctrl-C's path.

CI systems cancel a job with SIGTERM (GitHub Actions, GitLab, Jenkins) and a
closed terminal sends SIGHUP; by default either kills a Python process outright, leaving the
run's queues, tables and execution environments behind. Here the three are one
request to stop:

    1st signal  -> the run's cancel scope is cancelled: producing stops,
                   invocations are ended, what was measured is kept, and the
                   cleanup runs (each step bounded by the cleanup limit)
    2nd signal  -> noted; the bounded cleanup goes on (it is what makes exit
                   130 truthful)
    3rd signal  -> KeyboardInterrupt: cleanup is abandoned; the caller says by
                   name what may be left behind

Outside a run (no cancel scope attached, e.g. while the embedded backend
starts) the first signal raises KeyboardInterrupt at once, as Ctrl-C does;
inside ``Stop.deferred`` (an exploration) it is only noted, and the caller
stops at its next safe point.

Owns the handlers of those three signals while ``Stop.installed()`` is
active, and nothing else; prints nothing (the CLI reads ``Stop``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any

import anyio

SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that mean "stop, clean up and report" (SIGHUP is POSIX only)."""

ABANDON_AFTER = 3
"""The signal count at which cleanup is abandoned (KeyboardInterrupt)."""


class Stop:
    """A request to stop a run, made by a signal (or a caller, e.g. a test).

    Safe to call from a signal handler: cancellation is handed to the event
    loop with ``call_soon_threadsafe``, never run inside the handler.
    """

    def __init__(self) -> None:
        self.reason: str | None = None
        """What asked first, e.g. ``"SIGTERM"``; ``None`` while nobody asked."""
        self.count = 0
        """How many requests arrived."""
        self._cancel: Callable[[], None] | None = None

    @property
    def requested(self) -> bool:
        return self.reason is not None

    def request(self, reason: str) -> None:
        """Ask the attached run to stop; without one, raise KeyboardInterrupt."""
        self.count += 1
        if self.reason is None:
            self.reason = reason
        cancel = self._cancel
        if cancel is None or self.count >= ABANDON_AFTER:
            raise KeyboardInterrupt(reason)
        if self.count == 1:
            cancel()
        elif self.count == 2:
            # Signal handlers must not block or take locks; a raw write does neither.
            _note(
                f"{reason}: still cleaning up (bounded by the cleanup limit); "
                "interrupt again to abandon the cleanup\n"
            )

    @contextmanager
    def cancels(self, scope: anyio.CancelScope) -> Iterator[None]:
        """While inside, a request cancels ``scope`` (from the running event loop)."""
        loop = asyncio.get_running_loop()

        def cancel() -> None:
            loop.call_soon_threadsafe(scope.cancel)

        self._cancel = cancel
        try:
            if self.requested:
                scope.cancel()  # asked before the run attached: do not start it
            yield
        finally:
            self._cancel = None

    @contextmanager
    def deferred(self) -> Iterator[Stop]:
        """While inside, a request is only noted (``requested``, ``reason``): the caller
        polls it at points where stopping is safe (``explore``, between schedules); the
        third still raises KeyboardInterrupt. A signal's exception can land anywhere,
        even in a finalizer that swallows it; a flag cannot be lost."""
        self._cancel = lambda: None
        try:
            yield self
        finally:
            self._cancel = None

    @contextmanager
    def installed(self) -> Iterator[Stop]:
        """Route SIGINT, SIGTERM and SIGHUP to ``request`` (main thread only; else a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return

        def handle(signum: int, frame: FrameType | None) -> None:
            self.request(signal.Signals(signum).name)

        previous: dict[signal.Signals, Any] = {}
        try:
            for sig in SIGNALS:
                previous[sig] = signal.signal(sig, handle)
            yield self
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _note(text: str) -> None:
    with suppress(OSError):
        os.write(2, text.encode())
