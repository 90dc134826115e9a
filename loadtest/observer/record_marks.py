"""Which record of a batch the handler is on: the mark the observer stamps on each write.

A handler given a batch of SQS records processes them in its own way (a loop,
a batch processor, a task per record). To tie a write to the delivery that
caused it, the observer layer hands the handler the event with each record
as a ``TrackedRecord``: a ``dict`` (equal to the record, serialised the same,
every ``dict`` method intact) that, when the handler reads its ``body`` or
``messageId``, marks that record as the one the calling thread or task is on.
The observer stamps each write with the mark of the thread or task that made
it (``current_record``): a context variable, so records processed in parallel
tasks (``asyncio.gather``) or threads each keep their own mark.

A mark is evidence, not proof: a handler that reads every body first and
writes afterwards leaves every write marked with the last record read. The
checker trusts an invocation's marks only where they agree with what each
write stored (``loadtest.model.checker``).

Shipped in the observer layer: imports nothing beyond the standard library.
"""

from __future__ import annotations

import contextvars
from typing import Any

_MARKING = frozenset({"body", "messageId"})
"""The fields whose reading means the handler is on the record."""

_current: contextvars.ContextVar[str] = contextvars.ContextVar("loadtest_record", default="")


def current_record() -> str:
    """The messageId of the record the calling thread or task last read, or ""."""
    return _current.get()


def mark(message_id: str) -> contextvars.Token[str]:
    """Mark ``message_id`` as the record the calling thread or task is on (work the handler
    started carries the mark of the code that started it); ``unmark`` takes it back."""
    return _current.set(message_id)


def unmark(token: contextvars.Token[str]) -> None:
    """Put back the mark ``mark`` replaced."""
    _current.reset(token)


def clear() -> None:
    """Forget the mark (between invocations)."""
    _current.set("")


class TrackedRecord(dict[str, Any]):
    """An SQS record that marks itself current when its body or messageId is read."""

    __slots__ = ()

    def _mark(self, name: object) -> None:
        if name in _MARKING:
            message_id = dict.get(self, "messageId")
            if isinstance(message_id, str):
                _current.set(message_id)

    def __getitem__(self, name: str) -> Any:
        value = dict.__getitem__(self, name)
        self._mark(name)
        return value

    def get(self, name: str, default: Any = None) -> Any:
        self._mark(name)
        return dict.get(self, name, default)

    def __reduce__(self) -> Any:
        # Pickled or deep-copied (a handler handing records to a process pool), it is
        # the plain record it stands for.
        return (dict, (dict(self),))


def tracked(event: Any) -> Any:
    """The event with its records as ``TrackedRecord``s (a shallow copy); any other event
    as it is."""
    if not isinstance(event, dict):
        return event
    records = event.get("Records")
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        return event
    return {**event, "Records": [TrackedRecord(r) for r in records]}
