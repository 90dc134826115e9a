"""The producer: sends the planned messages on schedule with SendMessageBatch.

Open loop: each message is sent when the schedule says, whatever the consumer
does; batches due go in order to ``SENDERS`` concurrent senders, so a slow
backend makes messages late — which end-to-end latency, measured from the
intended time, shows — instead of making the schedule wait. Resends planned
"after completion" wait for their id's first copy to settle. Owns nothing but
the sends; records each message's intended and actual send time in the
history it is given.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import botocore.exceptions

from loadtest.model.history.log import History, SentMessage
from loadtest.model.scenario.envelopes import sqs_attributes
from loadtest.model.workload.schedule import Part, PlannedMessage, split

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from types_aiobotocore_sqs.client import SQSClient

BATCH = 10
"""SendMessageBatch's maximum entries per call."""
SENDERS = 16
"""Concurrent SendMessageBatch calls in flight."""

Batch = tuple[Sequence[PlannedMessage], int | None]
"""Up to ``BATCH`` messages to send in one call, and when they are due (None: each when the
schedule says)."""


async def produce(
    sqs: SQSClient,
    queue_url: str,
    planned: Sequence[PlannedMessage],
    history: History,
    start_ns: int,
    on_sent: Callable[[list[str]], None],
    first_settled: Callable[[str], Awaitable[None]],
    clock: Callable[[], int] = time.monotonic_ns,
    stop_sending: anyio.Event | None = None,
) -> None:
    """Send every planned message; refused sends are recorded, not raised.

    ``on_sent`` is given the message ids of each batch the queue took.
    ``first_settled(business_id)`` returns once the first copy of that id was
    acknowledged or dead-lettered (for ``after-completion`` resends). Once
    ``stop_sending`` is set no further batch is started (those in flight finish
    and are recorded), so every message the backend took is in the history.
    """
    stop = stop_sending if stop_sending is not None else anyio.Event()
    fifo = is_fifo(queue_url)
    # Batches due go in order to a fixed pool of senders. A burst queues every batch
    # at once: a queued batch is its positions in the schedule and when it is due, not
    # a task of its own, nor its messages (read once a sender takes it).
    due, batches = anyio.create_memory_object_stream[Batch](math.inf)

    async def sender(batches: MemoryObjectReceiveStream[Batch]) -> None:
        async with batches:
            async for messages, due_ns in batches:
                if not stop.is_set():  # else never sent, so not in the history
                    await send(messages, due_ns)

    async def send(messages: Sequence[PlannedMessage], due_ns: int | None) -> None:
        """Send ``messages``, due at ``due_ns`` (None: when the schedule says)."""
        chunk = list(messages)
        intended_ns = [start_ns + m.offset_ns if due_ns is None else due_ns for m in chunk]
        entries = [entry(m, fifo=fifo) for m in chunk]
        try:
            response = await sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)  # type: ignore[arg-type]
        except botocore.exceptions.ClientError as exc:
            # A refused batch is data (send_failures); an unreachable backend
            # propagates and ends the run.
            sent_ns = clock()
            for m, intended in zip(chunk, intended_ns, strict=True):
                history.sent.append(_sent(m, intended, sent_ns, None, str(exc)))
            return
        sent_ns = clock()
        ids = {e["Id"]: e["MessageId"] for e in response.get("Successful", [])}
        errors = {e["Id"]: e.get("Message", e["Code"]) for e in response.get("Failed", [])}
        for m, intended in zip(chunk, intended_ns, strict=True):
            key = str(m.index)
            history.sent.append(_sent(m, intended, sent_ns, ids.get(key), errors.get(key)))
        on_sent(list(ids.values()))

    async def scheduled(messages: Part, due: MemoryObjectSendStream[Batch]) -> None:
        # The batch is messages[first:end].
        first = end = 0

        def flush() -> None:
            nonlocal first
            if end > first and not stop.is_set():
                due.send_nowait((Part(messages.planned, messages.positions[first:end]), None))
                first = end

        async with due:
            for position, offset_ns in enumerate(messages.offsets_ns()):
                if stop.is_set():
                    return
                due_ns = start_ns + offset_ns
                wait_s = (due_ns - clock()) / 1e9
                if wait_s > 0:
                    flush()
                    with anyio.move_on_after(wait_s):
                        await stop.wait()
                    if stop.is_set():
                        return
                end = position + 1
                if end - first == BATCH:
                    flush()
            flush()

    async def after_first(
        business_id: str, resends: Sequence[PlannedMessage], due: MemoryObjectSendStream[Batch]
    ) -> None:
        async with due:
            async with anyio.create_task_group() as first_or_stop:

                async def settled() -> None:
                    await first_settled(business_id)
                    first_or_stop.cancel_scope.cancel()

                async def stopped() -> None:
                    await stop.wait()
                    first_or_stop.cancel_scope.cancel()

                first_or_stop.start_soon(settled)
                first_or_stop.start_soon(stopped)
            if stop.is_set():
                return
            due_ns = clock()
            for offset in range(0, len(resends), BATCH):
                due.send_nowait((resends[offset : offset + BATCH], due_ns))

    # Read from the schedule as they go, not copied: a run's schedule is long.
    on_schedule, after_completion = split(planned)
    waiting: dict[str, list[PlannedMessage]] = defaultdict(list)
    for m in after_completion:
        assert m.business_id is not None
        waiting[m.business_id].append(m)
    async with anyio.create_task_group() as tg:
        for _ in range(SENDERS):
            tg.start_soon(sender, batches.clone())
        batches.close()
        # Each feeder closes its clone of ``due`` when done; the senders stop once all
        # are closed and every batch queued was taken.
        async with due:
            tg.start_soon(scheduled, on_schedule, due.clone())
            for business_id, resends in waiting.items():
                tg.start_soon(after_first, business_id, resends, due.clone())


def is_fifo(queue_url: str) -> bool:
    """Whether the queue is FIFO: SQS requires a FIFO queue's name to end in ``.fifo``."""
    return queue_url.endswith(".fifo")


def entry(m: PlannedMessage, *, fifo: bool) -> dict[str, Any]:
    """One SendMessageBatch entry for ``m``, with its message attributes; a FIFO queue also
    gets its group and deduplication ids (none for content-based deduplication: the queue
    hashes the body)."""
    built: dict[str, Any] = {"Id": str(m.index), "MessageBody": m.body}
    if m.attributes:
        built["MessageAttributes"] = sqs_attributes(m.attributes)
    if fifo:
        built["MessageGroupId"] = m.group_id
        if m.deduplication_id is not None:
            built["MessageDeduplicationId"] = m.deduplication_id
    return built


def _sent(
    m: PlannedMessage, intended_ns: int, sent_ns: int, message_id: str | None, error: str | None
) -> SentMessage:
    return SentMessage(
        index=m.index,
        business_id=m.business_id,
        body=m.body,
        intended_ns=intended_ns,
        sent_ns=sent_ns,
        message_id=message_id,
        send_error=None if message_id else (error or "not sent"),
        poison=m.poison,
    )
