"""One poller of the event source mapping, bound to one execution environment.

``Poller`` long-polls ReceiveMessage for up to ``batch_size`` messages, builds the Lambda
event, invokes the handler in its environment and, on success, deletes the batch (only the
records not named in a partial batch response, with ``report_batch_item_failures``). On an
exception, a timeout or a crash nothing is deleted, so the messages reappear after the
visibility timeout. Each invocation is appended to the history, receipt handles redacted.

Owns one environment's deliveries; must not receive for other environments
(``loadtest.emulation.mapping.dispatcher`` drives several pollers from one receiver).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from loadtest.emulation.environment.parent_environments import ExecutionEnvironment, Reply
from loadtest.emulation.mapping.events import batch_item_failures, business_id_of, sqs_event
from loadtest.emulation.mapping.redaction import _lazy_fragments, _redact
from loadtest.emulation.mapping.settlement import Progress, Settlement
from loadtest.model.history.log import (
    Ack,
    History,
    Invocation,
    InvocationOutcome,
    Record,
    WriteRecord,
)
from loadtest.model.scenario.body import FLAT, BodyShape
from loadtest.model.scenario.loading import ConsumerSettings

if TYPE_CHECKING:
    from types_aiobotocore_sqs.client import SQSClient

POLL_WAIT_S = 1
"""Long-poll wait per ReceiveMessage (in seconds); short so a finished run stops promptly."""


def _outcome(reply: Reply, cut_off: bool) -> InvocationOutcome:
    if cut_off:
        return InvocationOutcome.CUT_OFF
    if reply.timed_out:
        return InvocationOutcome.TIMEOUT
    if reply.crashed:
        return InvocationOutcome.CRASH
    return InvocationOutcome.SUCCESS if reply.ok else InvocationOutcome.ERROR


Acknowledge = Callable[[list[dict[str, Any]], dict[str, str | None]], Awaitable[None]]
"""Takes an invocation's messages to delete and their business ids by message id."""


class Poller:
    """One poller bound to one execution environment.

    Used as it stands for batches a single ReceiveMessage cannot fill (a batching
    window, or ``batch_size`` over 10); otherwise ``Dispatcher`` receives for all
    environments and drives each one's ``Poller._deliver``.
    """

    poll_wait_s = POLL_WAIT_S
    """Long-poll wait per ReceiveMessage (in seconds)."""

    def __init__(
        self,
        *,
        sqs: SQSClient,
        queue_url: str,
        queue_arn: str,
        region: str,
        settings: ConsumerSettings,
        environment: ExecutionEnvironment,
        history: History,
        settlement: Settlement,
        progress: Progress,
        stopping: anyio.Event,
        on_writes: Callable[[tuple[WriteRecord, ...], tuple[Record, ...]], None],
        clock: Callable[[], int] = time.monotonic_ns,
        acknowledge: Acknowledge | None = None,
        body: BodyShape = FLAT,
    ) -> None:
        """``acknowledge``, when given, takes the messages to delete instead of a
        DeleteMessageBatch per invocation (see ``Dispatcher``); ``body`` says where a
        record's body carries its business id."""
        self.sqs = sqs
        self.queue_url = queue_url
        self.queue_arn = queue_arn
        self.region = region
        self.settings = settings
        self.environment = environment
        self.history = history
        self.settlement = settlement
        self.progress = progress
        self.stopping = stopping
        self.on_writes = on_writes
        self.clock = clock
        self.acknowledge = acknowledge
        self.body = body
        self._polling: anyio.CancelScope | None = None
        """The scope of the ReceiveMessage in progress, if any (``stop_polling`` cancels it)."""

    async def run(self) -> None:
        # The stop flag is checked between polls: a poll waits at most
        # POLL_WAIT_S, and an invocation in progress always finishes, so its
        # writes are observed before the end state is read.
        while not self.stopping.is_set():
            messages = await self._receive()
            if messages:
                await self._deliver(messages)

    async def _receive(self) -> list[dict[str, Any]]:
        """A batch as the event source mapping builds one.

        Without a batching window, one long poll of up to ``batch_size`` (at
        most 10, SQS's limit). With one, keep polling until the batch is full
        or the window has passed since the first message arrived.
        """
        settings = self.settings
        messages = await self._poll(min(10, settings.batch_size), POLL_WAIT_S)
        if not messages or settings.batching_window_s <= 0:
            return messages
        window_ends = self.clock() + int(settings.batching_window_s * 1e9)
        while len(messages) < settings.batch_size and not self.stopping.is_set():
            remaining_s = (window_ends - self.clock()) / 1e9
            if remaining_s <= 0:
                break
            wait_s = max(0, min(POLL_WAIT_S, int(remaining_s)))
            more = await self._poll(min(10, settings.batch_size - len(messages)), wait_s)
            messages.extend(more)
            if not more and wait_s == 0:
                await anyio.sleep(min(remaining_s, 0.05))
        return messages

    async def _poll(self, count: int, wait_s: int) -> list[dict[str, Any]]:
        """One ReceiveMessage; empty when the run stops while it waits (``stop_polling``)."""
        with anyio.CancelScope() as self._polling:
            if self.stopping.is_set():
                return []
            response = await self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=count,
                WaitTimeSeconds=wait_s,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            messages: list[dict[str, Any]] = [dict(m) for m in response.get("Messages", [])]
            return messages
        return []

    def stop_polling(self) -> None:
        """End a long poll in progress: called once every sent message is settled, so a
        finished run stops at once rather than after the poll's wait (an invocation in
        progress is not touched, and still finishes)."""
        if self._polling is not None:
            self._polling.cancel()

    async def _deliver(self, messages: list[dict[str, Any]]) -> bool:
        """Invoke the handler with ``messages`` and acknowledge what succeeded; True when
        every record is to be deleted (the next batch of a FIFO group may follow)."""
        received_ns = self.clock()
        records = tuple(
            Record(
                message_id=m["MessageId"],
                receive_count=int(m.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
                business_id=business_id_of(m["Body"], self.body),
            )
            for m in messages
        )
        self.progress.received += len(messages)
        self.progress.in_flight += len(messages)
        request_id = str(uuid.uuid4())
        try:
            reply = await self.environment.invoke(
                request_id, sqs_event(messages, self.queue_arn, self.region)
            )
        except anyio.get_cancelled_exc_class():
            # The run's deadline or an interrupt: the invocation still happened, and its writes
            # are on record. Count it as a delivery; acknowledge nothing.
            with anyio.CancelScope(shield=True):
                reply = await self.environment.cut_off(request_id)
                self._record(request_id, records, received_ns, reply, messages, set(), cut_off=True)
            raise
        writes = tuple(reply.observed.writes)
        self.on_writes(writes, records)
        self.settlement.resent(e.resent for e in reply.observed.effects if e.resent)
        given = {m["MessageId"] for m in messages}
        deleted = {e.deleted: e for e in reply.observed.effects if e.deleted in given}

        failed: set[str] = set()
        invalid = False
        if reply.ok and self.settings.report_batch_item_failures:
            named = (
                batch_item_failures(reply.result, {r.message_id for r in records})
                if reply.response_json
                else None  # a response that is not JSON fails the batch (Lambda's rule)
            )
            invalid = named is None
            failed = {r.message_id for r in records} if named is None else named
        if not reply.ok:
            failed = {r.message_id for r in records}
            self.progress.handler_errors += 1
        to_delete = [m for m in messages if m["MessageId"] not in failed | deleted.keys()]
        if reply.ok and reply.ack_lost:
            # The handler succeeded; the acknowledgement never reached the queue (a point
            # fault): nothing is deleted, the messages come back after the visibility timeout.
            to_delete = []
        business = {r.message_id: r.business_id for r in records}
        for message_id, effect in deleted.items():
            # The handler deleted it itself: acknowledged by that delete, whether or not
            # its invocation then succeeded (Lambda has nothing left to delete or retry).
            self.history.acks.append(Ack(message_id, effect.ended_ns, effect.started_ns))
            self.progress.acked += 1
            self.settlement.settle(message_id, business[message_id])
        if self.acknowledge is not None:
            # Batched across invocations: the acknowledger settles them once deleted.
            self.progress.in_flight -= len(messages)
            self._record(request_id, records, received_ns, reply, messages, failed, invalid=invalid)
            await self.acknowledge(to_delete, business)
            return not failed and not reply.ack_lost
        acked = await self._delete(to_delete)
        self.progress.in_flight -= len(messages)
        self._record(request_id, records, received_ns, reply, messages, failed, invalid=invalid)
        for message_id in acked:
            self.settlement.settle(message_id, business[message_id])
        return len(acked) + len(deleted) == len(messages)

    def _record(
        self,
        request_id: str,
        records: tuple[Record, ...],
        received_ns: int,
        reply: Reply,
        messages: list[dict[str, Any]],
        failed: set[str],
        *,
        cut_off: bool = False,
        invalid: bool = False,
    ) -> None:
        """Append the invocation to the history (receipt handles redacted)."""
        handles = {m["ReceiptHandle"] for m in messages}
        fragments = _lazy_fragments(handles)
        error = _redact(reply.error, handles, fragments)
        if invalid:
            error = "invalid batchItemFailures response: the whole batch is retried"
        observed = reply.observed
        self.history.invocations.append(
            Invocation(
                request_id=request_id,
                environment=self.environment.number,
                records=records,
                received_ns=received_ns,
                started_ns=reply.started_ns,
                ended_ns=reply.ended_ns,
                outcome=_outcome(reply, cut_off),
                error=error,
                writes=tuple(observed.writes),
                failed_message_ids=tuple(sorted(failed)) if reply.ok else (),
                result=_redact(reply.result, handles, fragments),
                log_tail=_redact(reply.log_tail, handles, fragments),
                reads=tuple(observed.reads),
                unobserved=tuple(observed.unobserved),
                observer_faults=tuple(observed.faults),
                side_writes=tuple(observed.side),
                effects=tuple(observed.effects),
                left_work=reply.left_work,
                ended_work=reply.ended_work,
            )
        )

    async def _delete(self, messages: list[dict[str, Any]]) -> list[str]:
        if not messages:
            return []
        requested_ns = self.clock()
        response = await self.sqs.delete_message_batch(
            QueueUrl=self.queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(messages)
            ],
        )
        acked_ns = self.clock()
        ok = {entry["Id"] for entry in response.get("Successful", [])}
        acked = [m["MessageId"] for i, m in enumerate(messages) if str(i) in ok]
        for message_id in acked:
            self.history.acks.append(Ack(message_id, acked_ns, requested_ns))
        self.progress.acked += len(acked)
        return acked
