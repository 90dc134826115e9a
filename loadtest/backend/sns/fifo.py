"""A FIFO topic's deduplication: a repeated deduplication id within 5 minutes is accepted
and not delivered again, as SNS does.

Owns ``deduplicated``, the replacement for moto's ``Topic.publish``, and ``install``, which
puts it in place. Must not touch standard topics or anything a subscription delivers.

Why: moto 5.2.5's FIFO topic does not deduplicate; it passes ``MessageDeduplicationId``
on to each subscription. A FIFO queue subscribed then drops the repeat itself, but a
standard queue subscribed to a FIFO topic received every repeat, where SNS delivers one.

What changes: on a FIFO topic, the deduplication id (``MessageDeduplicationId``, or the
SHA-256 of the message when ``ContentBasedDeduplication`` is on) is remembered for
``WINDOW_S``; a publish that repeats it within that time answers the first publish's
``MessageId`` and delivers nothing. ``install`` is called by ``loadtest.backend.http.app``
only when the dispatcher builds SNS's app, so a run that never calls SNS never imports it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from typing import Any

WINDOW_S = 300.0
"""How long SNS remembers a FIFO topic's deduplication id."""

_SEEN_ATTR = "_loadtest_deduplication"
_LOCK = threading.Lock()


def deduplicated(publish: Callable[..., str]) -> Callable[..., str]:
    """moto's ``Topic.publish``; on a FIFO topic, a deduplication id seen within
    ``WINDOW_S`` answers the first ``MessageId`` without delivering again."""

    def topic_publish(
        topic: Any,
        message: str,
        subject: str | None = None,
        message_attributes: dict[str, Any] | None = None,
        group_id: str | None = None,
        deduplication_id: str | None = None,
        message_structure: str | None = None,
    ) -> str:
        def deliver() -> str:
            return publish(
                topic,
                message,
                subject=subject,
                message_attributes=message_attributes,
                group_id=group_id,
                deduplication_id=deduplication_id,
                message_structure=message_structure,
            )

        if not topic.fifo_topic:
            return deliver()
        key = deduplication_id
        if not key and str(topic.content_based_deduplication).lower() == "true":
            key = hashlib.sha256(message.encode()).hexdigest()
        if not key:
            return deliver()
        now = time.monotonic()
        with _LOCK:  # one publish of an id at a time: a concurrent repeat waits, then finds it
            seen: dict[str, tuple[float, str]] = topic.__dict__.setdefault(_SEEN_ATTR, {})
            for stale in [k for k, (until, _) in seen.items() if until <= now]:
                del seen[stale]
            if key in seen:
                return seen[key][1]
            message_id = deliver()
            seen[key] = (now + WINDOW_S, message_id)
            return message_id

    topic_publish.__wrapped__ = publish  # type: ignore[attr-defined]
    return topic_publish


def install() -> None:
    """Put ``deduplicated`` in place of moto's ``Topic.publish`` (idempotent)."""
    from moto.sns.models import Topic

    with _LOCK:
        if not hasattr(Topic.publish, "__wrapped__"):
            Topic.publish = deduplicated(Topic.publish)  # type: ignore[method-assign]
