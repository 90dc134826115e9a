"""The producer: sends the planned messages with SendMessageBatch, concurrently.

Owns nothing but the sends; records each message's intended and actual send
time in the history it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import anyio
import botocore.exceptions

from loadtest.history import History, SentMessage
from loadtest.schedule import PlannedMessage

if TYPE_CHECKING:
    from types_aiobotocore_sqs.client import SQSClient

BATCH = 10
"""SendMessageBatch's maximum entries per call."""
SENDERS = 8
"""Concurrent SendMessageBatch calls in flight."""


async def produce(
    sqs: SQSClient,
    queue_url: str,
    planned: Sequence[PlannedMessage],
    history: History,
    start_ns: int,
    on_sent: Callable[[int], None],
    clock: Callable[[], int] = time.monotonic_ns,
) -> None:
    """Send every planned message; failures are recorded, not raised.

    A burst: every message is intended at ``start_ns``, so end-to-end latency
    includes the time a message waited behind the burst.
    """
    limiter = anyio.CapacityLimiter(SENDERS)

    async def send(chunk: Sequence[PlannedMessage]) -> None:
        async with limiter:
            entries = [{"Id": str(m.index), "MessageBody": m.body} for m in chunk]
            try:
                response = await sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)  # type: ignore[arg-type]
            except botocore.exceptions.ClientError as exc:
                # A refused batch is data (send_failures); an unreachable backend
                # propagates and ends the run.
                sent_ns = clock()
                for m in chunk:
                    history.sent.append(_sent(m, start_ns, sent_ns, None, str(exc)))
                return
            sent_ns = clock()
            ids = {entry["Id"]: entry["MessageId"] for entry in response.get("Successful", [])}
            errors = {
                entry["Id"]: entry.get("Message", entry["Code"])
                for entry in response.get("Failed", [])
            }
            for m in chunk:
                history.sent.append(
                    _sent(m, start_ns, sent_ns, ids.get(str(m.index)), errors.get(str(m.index)))
                )
            on_sent(len(ids))

    async with anyio.create_task_group() as tg:
        for offset in range(0, len(planned), BATCH):
            tg.start_soon(send, planned[offset : offset + BATCH])


def _sent(
    m: PlannedMessage, start_ns: int, sent_ns: int, message_id: str | None, error: str | None
) -> SentMessage:
    return SentMessage(
        index=m.index,
        business_id=m.business_id,
        body=m.body,
        intended_ns=start_ns + m.offset_ns,
        sent_ns=sent_ns,
        message_id=message_id,
        send_error=None if message_id else (error or "not sent"),
    )
