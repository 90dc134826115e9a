"""moto's wall clock, read without building datetimes.

Owns the replacement ``loadtest.backend.patches`` installs for
``moto.core.utils.unix_time`` (which ``unix_time_millis`` calls) and ``moto.sqs.models``'s
copy of it: with no argument, the same float from the same clock, computed from
``time.time_ns()`` instead of ``datetime.now(UTC)`` minus the epoch.

Why: SQS reads the clock five times or more per message (``SendMessage`` counts the queue's
visible, in-flight and delayed messages at one instant each, then stamps the message;
``ReceiveMessage`` stamps it again and checks its retention). Each read built two
datetimes and a timedelta, ~4% of the backend's CPU in the benchmark.

Must not touch the value: ``datetime.now`` reads the same system clock and truncates it to
microseconds, and the float is assembled as moto assembles it (days, then seconds plus
microseconds), so it is bit for bit what moto's would have been at that instant. A
``unix_time(dt)`` of a given datetime is moto's own, and so is the clock once someone
replaced moto's (``moto.core.utils.utcnow`` patched, as tests do, or ``datetime.datetime``
frozen). Installs nothing itself.
"""

from __future__ import annotations

import datetime
import time
from types import ModuleType
from typing import Protocol

_DATETIME = datetime.datetime


class UnixTime(Protocol):
    """moto's ``unix_time``: seconds since the epoch of ``dt``, or of now."""

    def __call__(self, dt: datetime.datetime | None = None) -> float: ...


def unix_time_of_microseconds(microseconds_since_epoch: int) -> float:
    """moto's ``unix_time(dt)`` for the naive UTC datetime this many microseconds after
    1970-01-01, without the datetime."""
    seconds, microseconds = divmod(microseconds_since_epoch, 1_000_000)
    days, seconds = divmod(seconds, 86_400)
    return (days * 86400) + (seconds + (microseconds / 1e6))


def fast_unix_time(moto_unix_time: UnixTime, moto_utils: ModuleType) -> UnixTime:
    """moto's ``unix_time(dt=None)`` (of ``moto_utils``, ``moto.core.utils``), reading the
    system clock directly when ``dt`` is None and moto's ``utcnow`` is its own."""
    moto_utcnow = moto_utils.utcnow

    def unix_time(dt: datetime.datetime | None = None) -> float:
        if (
            dt is not None
            or moto_utils.utcnow is not moto_utcnow
            or datetime.datetime is not _DATETIME
        ):
            return moto_unix_time(dt)
        return unix_time_of_microseconds(time.time_ns() // 1000)

    unix_time.__wrapped__ = moto_unix_time  # type: ignore[attr-defined]
    return unix_time
