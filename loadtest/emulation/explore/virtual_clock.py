"""The virtual clock of ``explore``: what time the handlers of an explored schedule see.

While installed, ``time.time``, ``time.time_ns``, ``time.monotonic``,
``time.monotonic_ns``, ``time.perf_counter``, ``time.sleep`` and
``datetime.datetime.now``/``utcnow``/``today`` answer from the clock **in the
threads it was told about** (the deliveries'); every other thread (the
scheduler, pytest, the event loop) sees real time. A sleep in a delivery is
handed to ``on_sleep`` (the explorer parks the delivery there until the clock
reaches its end), so a handler that sleeps 1.5 s is explored in microseconds.

Limits (stated in docs/explore.md): a module that bound a function before the
clock was installed (``from time import time`` at import, ``from datetime
import datetime`` in a module imported earlier) keeps real time; C extensions
read the system clock directly; threads a handler starts itself are not
deliveries and see real time.

Owns the patching and nothing else: when time moves is the explorer's.
"""

from __future__ import annotations

import datetime as _datetime
import threading
import time as _time
from collections.abc import Callable
from typing import Any

VIRTUAL_EPOCH_NS = 1_767_225_600 * 1_000_000_000
"""Where the virtual wall clock starts: 2026-01-01T00:00:00Z (fixed, so a replay is exact)."""

_real_time = _time.time
_real_time_ns = _time.time_ns
_real_monotonic = _time.monotonic
_real_monotonic_ns = _time.monotonic_ns
_real_perf_counter = _time.perf_counter
_real_sleep = _time.sleep
_real_datetime = _datetime.datetime


class VirtualClock:
    """Nanoseconds since the schedule started; moved by the explorer only."""

    def __init__(self, on_sleep: Callable[[float], None]) -> None:
        self.elapsed_ns = 0
        self.on_sleep = on_sleep
        self.threads: set[int] = set()
        """Idents of the threads that see this clock."""

    def sees(self) -> bool:
        return threading.get_ident() in self.threads

    def wall_ns(self) -> int:
        return VIRTUAL_EPOCH_NS + self.elapsed_ns

    def monotonic_ns(self) -> int:
        # Far from 0, as a real monotonic clock is, so "0 means unset" code behaves.
        return 1_000_000_000_000 + self.elapsed_ns


_active: VirtualClock | None = None
_install_lock = threading.Lock()


def _clock() -> VirtualClock | None:
    clock = _active
    return clock if clock is not None and clock.sees() else None


def _time_s() -> float:
    clock = _clock()
    return clock.wall_ns() / 1e9 if clock else _real_time()


def _time_ns() -> int:
    clock = _clock()
    return clock.wall_ns() if clock else _real_time_ns()


def _monotonic() -> float:
    clock = _clock()
    return clock.monotonic_ns() / 1e9 if clock else _real_monotonic()


def _monotonic_ns() -> int:
    clock = _clock()
    return clock.monotonic_ns() if clock else _real_monotonic_ns()


def _perf_counter() -> float:
    clock = _clock()
    return clock.monotonic_ns() / 1e9 if clock else _real_perf_counter()


def _sleep(seconds: Any) -> None:
    clock = _clock()
    if clock is None:
        _real_sleep(seconds)
    else:
        clock.on_sleep(max(0.0, float(seconds)))


class _VirtualDatetime(_real_datetime):
    """``datetime.datetime`` whose ``now``/``utcnow``/``today`` follow the virtual clock."""

    @classmethod
    def now(cls, tz: Any = None) -> Any:
        clock = _clock()
        if clock is None:
            return _real_datetime.now(tz)
        return _real_datetime.fromtimestamp(clock.wall_ns() / 1e9, tz)

    @classmethod
    def utcnow(cls) -> Any:
        clock = _clock()
        if clock is None:
            return _real_datetime.now(_datetime.UTC).replace(tzinfo=None)
        return _real_datetime.fromtimestamp(clock.wall_ns() / 1e9, _datetime.UTC).replace(
            tzinfo=None
        )

    @classmethod
    def today(cls) -> Any:
        return cls.now()


def install(clock: VirtualClock) -> None:
    """Make ``clock`` the time of its threads (one clock at a time per process)."""
    global _active
    with _install_lock:
        if _active is not None:
            raise RuntimeError("a virtual clock is already installed in this process")
        _active = clock
        _time.time = _time_s
        _time.time_ns = _time_ns
        _time.monotonic = _monotonic
        _time.monotonic_ns = _monotonic_ns
        _time.perf_counter = _perf_counter
        _time.sleep = _sleep
        _datetime.datetime = _VirtualDatetime  # type: ignore[misc]


def uninstall() -> None:
    """Real time for everyone again."""
    global _active
    with _install_lock:
        _active = None
        _time.time = _real_time
        _time.time_ns = _real_time_ns
        _time.monotonic = _real_monotonic
        _time.monotonic_ns = _real_monotonic_ns
        _time.perf_counter = _real_perf_counter
        _time.sleep = _real_sleep
        _datetime.datetime = _real_datetime  # type: ignore[misc]
