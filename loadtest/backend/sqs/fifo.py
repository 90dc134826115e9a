"""FIFO semantics moto 5.2.x gets wrong, patched so the embedded backend behaves like SQS.

Owns: FIFO deduplication and sequence numbers (``SQSBackend.send_message`` for FIFO queues),
the FIFO long poll, and the release of in-flight FIFO messages whose visibility timeout ran
out before moto picks the next message of their group. ``loadtest.backend.patches`` installs both with the rest;
must not touch standard queues, redrive to the DLQ (never deduplicated, as on SQS) or any
other service.

Why, measured on moto 5.2.5:

* Deduplication. moto drops a send only while a message with the same deduplication id is
  still in the queue: once it is deleted, a resend is delivered again. SQS remembers the
  id for five minutes "even after the message has been received and deleted", so a
  producer's resend after the consumer acknowledged the first copy is accepted and never
  delivered::

      producer       queue (SQS)                 queue (moto)
      send m1 id=A   stored, delivered, deleted  stored, delivered, deleted
      send m2 id=A   accepted, dropped (< 5 min) accepted, DELIVERED AGAIN

  Here every FIFO send looks its id up in a per-queue record of the ids sent within the
  window, whether or not their message still exists; a duplicate answers success with
  the first message's MessageId and sequence number and stores nothing.
* Sequence numbers. moto draws each FIFO message's SequenceNumber at random (20 digits);
  SQS's "continues to increase for a particular MessageGroupId", and a consumer may rely
  on it (apply a message only if it is newer than the one stored). Here each queue counts
  up, which increases within every group.
* The window. SQS's is 300 s. The queue tag ``loadtest:dedup-window-s`` (set by the
  labelled fault ``faults.dedup_window_s``) shortens it, so a scenario can show a resend
  after the window being delivered again in seconds.
* Group order after a timeout. moto counts a group as busy while any of its messages is
  in its pending set, and takes a message out of that set only when it meets it visible
  again, oldest first. With two messages of a group timed out, the oldest is skipped
  (its younger sibling still "pending") and the younger one is delivered first. Messages
  whose visibility ran out are released before moto's receive looks, so the oldest goes
  first, as on SQS.
* Long polls. See ``receive``: moto's spins under the queue's lock while a blocked
  group's messages are visible, stalling every send to the queue for the whole poll.
"""

from __future__ import annotations

import copy
import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from moto.core.utils import unix_time_millis
from moto.sqs import models as sqs_models
from moto.sqs.models import Message, Queue, SQSBackend

from loadtest.aws.fifo import DEDUP_WINDOW_TAG

SQS_DEDUP_WINDOW_S = 300.0
"""SQS's deduplication interval (in seconds)."""
_RECORD_ATTR = "_loadtest_dedup"
_SEQUENCE_ATTR = "_loadtest_sequence"
_FIRST_SEQUENCE_NUMBER = 10**19
"""Below the first SequenceNumber a queue hands out: SQS's are 20-digit numbers too."""

_Send = Callable[..., Message]


def dedup_window_s(queue: Queue) -> float:
    """The queue's deduplication window (in seconds): SQS's, or the fault's shorter one."""
    try:
        given = float(queue.tags.get(DEDUP_WINDOW_TAG, SQS_DEDUP_WINDOW_S))
    except ValueError:
        return SQS_DEDUP_WINDOW_S
    return given if 0 < given <= SQS_DEDUP_WINDOW_S else SQS_DEDUP_WINDOW_S


def _record(queue: Queue) -> OrderedDict[str, tuple[float, Message]]:
    """Deduplication id -> (first send in ms, that message), oldest first."""
    found: OrderedDict[str, tuple[float, Message]] | None = queue.__dict__.get(_RECORD_ATTR)
    if found is None:
        found = OrderedDict()
        queue.__dict__[_RECORD_ATTR] = found
    return found


def _next_sequence_number(queue: Queue) -> str:
    """The queue's next SequenceNumber (call under its lock): 20 digits, always increasing."""
    last: int = queue.__dict__.get(_SEQUENCE_ATTR, _FIRST_SEQUENCE_NUMBER)
    queue.__dict__[_SEQUENCE_ATTR] = last + 1
    return str(last + 1)


def _dedup_id(queue: Queue, body: str, given: str | None) -> str | None:
    if given is not None:
        return given
    if queue.attributes.get("ContentBasedDeduplication") in ("true", True):
        return hashlib.sha256(body.encode("utf-8")).hexdigest()
    return None  # moto refuses the send: no id and no content-based deduplication


def make_send_message(moto_send_message: _Send) -> _Send:
    def send_message(
        backend: SQSBackend, queue_name: str, message_body: str, *args: Any, **kwargs: Any
    ) -> Message:
        queue = backend.get_queue(queue_name)
        if not queue.fifo_queue:
            return moto_send_message(backend, queue_name, message_body, *args, **kwargs)
        dedup = _dedup_id(queue, message_body, kwargs.get("deduplication_id"))
        with queue._messages_lock:
            record = _record(queue)
            now_ms = unix_time_millis()
            window_ms = dedup_window_s(queue) * 1000
            while record and now_ms - next(iter(record.values()))[0] >= window_ms:
                record.popitem(last=False)
            if dedup is not None and dedup in record:
                # Accepted, not stored: the answer names the first message (a copy, since
                # SendMessageBatch labels what it returns with the entry's Id).
                return copy.copy(record[dedup][1])
            message = moto_send_message(backend, queue_name, message_body, *args, **kwargs)
            message.sequence_number = _next_sequence_number(queue)
            if dedup is not None:
                record[dedup] = (now_ms, message)
            return message

    send_message.__wrapped__ = moto_send_message  # type: ignore[attr-defined]
    return send_message


FIFO_RECHECK_S = 0.05
"""Longest a FIFO long poll sleeps between looks (in seconds) when nothing wakes it: a
message of a blocked group may become visible again without any request."""


def receive(
    moto_receive_message: Callable[..., list[Message]],
    backend: SQSBackend,
    queue_name: str,
    count: int,
    wait_seconds_timeout: int,
    visibility_timeout: int,
    message_attribute_names: list[str] | None,
    reindex: Callable[[], None],
) -> list[Message]:
    """A FIFO ReceiveMessage: moto's selection, one pass at a time, under the queue's lock.

    moto's own long poll waits "until any message is visible", which a message of a
    blocked group is: it spins holding the queue's lock, and sends wait for the whole
    poll (measured: 1 s stalls at POLL_WAIT_S = 1). Here each pass returns at once and the
    wait between passes releases the lock until a send, a delete or a visibility change
    notifies, or ``FIFO_RECHECK_S`` passes.
    """
    queue = backend.get_queue(queue_name)
    deadline = time.monotonic() + wait_seconds_timeout
    with queue._messages_lock:
        while True:
            release_timed_out(queue)
            try:
                found = moto_receive_message(
                    backend, queue_name, count, 0, visibility_timeout, message_attribute_names
                )
            finally:
                reindex()
            remaining_s = deadline - time.monotonic()
            if found or remaining_s <= 0:
                return found
            queue._messages_lock.wait(min(remaining_s, FIFO_RECHECK_S))


def release_timed_out(queue: Queue) -> None:
    """Take the FIFO messages visible again out of moto's pending set (caller holds the
    queue's lock), so their group is free and its oldest message is delivered first."""
    pending = queue.pending_messages
    for message in [m for m in pending if m.visible]:
        pending.discard(message)


def disable_moto_dedup() -> None:
    """moto's own check (messages still queued, 300 s) would drop sends the window above
    lets through; the record above is the one place deduplication is decided."""
    sqs_models.DEDUPLICATION_TIME_IN_SECONDS = 0
