"""The runner: Lambda's SQS event source mapping, emulated against a real queue.

One poller per execution environment: long-poll ReceiveMessage for up to
``batch_size`` messages, build the Lambda event, invoke the handler in the
environment, and on success delete the batch (only the records not named in a
partial batch response, with ``report_batch_item_failures``). On an exception,
a timeout or a crash nothing is deleted, so the messages reappear after the
visibility timeout and the queue's redrive policy eventually moves them to the
DLQ. A DLQ watcher records what arrives there.

Owns the pollers and the watcher; the engine owns the task group they run in.
"""

from __future__ import annotations

import math
import re
import time
import urllib.parse
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from loadtest.emulation.environments import ExecutionEnvironment, Reply
from loadtest.emulation.events import batch_item_failures, business_id_of, sqs_event
from loadtest.model.history import (
    Ack,
    DeadLetter,
    History,
    Invocation,
    InvocationOutcome,
    Record,
    WriteRecord,
)
from loadtest.model.scenario import ConsumerSettings

if TYPE_CHECKING:
    from types_aiobotocore_sqs.client import SQSClient

POLL_WAIT_S = 1
"""Long-poll wait per ReceiveMessage (in seconds); short so a finished run stops promptly."""
DLQ_HOLD_S = 43_200
"""Visibility timeout (in seconds) the DLQ watcher sets so it sees each dead letter once."""


@dataclass
class Progress:
    """Live counters for a progress display; written by the runner only."""

    sent: int = 0
    received: int = 0
    in_flight: int = 0
    acked: int = 0
    dead_lettered: int = 0
    duplicate_writes: int = 0
    handler_errors: int = 0
    rate_note: str = ""
    """Set while the requested arrival rate is not being reached (both figures, the backlog)."""
    backlog_peak: int = 0
    """The most messages sent and not yet settled at once."""
    stopped_early: str | None = None
    """Why sending stopped before the workload was sent (``max_backlog``)."""


@dataclass
class Settlement:
    """Tracks which sent messages are settled (acknowledged or dead-lettered)."""

    expected: set[str] | None = None
    settled: set[str] = field(default_factory=set)
    done: anyio.Event = field(default_factory=anyio.Event)
    _by_business_id: dict[str, anyio.Event] = field(default_factory=dict)

    def settle(self, message_id: str, business_id: str | None) -> None:
        self.settled.add(message_id)
        if business_id is not None:
            self._event(business_id).set()
        self.check()

    def _event(self, business_id: str) -> anyio.Event:
        return self._by_business_id.setdefault(business_id, anyio.Event())

    async def first_settled(self, business_id: str) -> None:
        """Return once any message of ``business_id`` was settled."""
        await self._event(business_id).wait()

    def expect(self, message_ids: set[str]) -> None:
        self.expected = message_ids
        self.check()

    def check(self) -> None:
        if self.expected is not None and self.expected <= self.settled:
            self.done.set()


REDACTED = "<receipt-handle>"
HANDLE_FRAGMENT_CHARS = 16
"""A run of this many characters of a receipt handle, anywhere in a text, is redacted."""
_TOKEN = re.compile(r"[A-Za-z0-9+/=_%.~-]{" + str(HANDLE_FRAGMENT_CHARS) + ",}")


def redact(value: Any, handles: set[str]) -> Any:
    """``value`` with every receipt handle replaced: they are credentials, never reported.

    A handler may echo its event in its result, error or log; the report keeps
    those, so the handles of the batch are cut out of them here: whole, and
    any token holding a fragment of one (truncated, URL-quoted or embedded in a
    longer string) of ``HANDLE_FRAGMENT_CHARS`` characters or more.
    """
    return _redact(value, handles, _lazy_fragments(handles))


def _lazy_fragments(handles: set[str]) -> Callable[[], frozenset[str]]:
    """The fragments of ``handles``, computed on first use: most results and logs hold
    no token long enough to need them, and building them costs more than the rest."""
    cache: list[frozenset[str]] = []

    def fragments() -> frozenset[str]:
        if not cache:
            cache.append(_fragments(handles))
        return cache[0]

    return fragments


def _fragments(handles: set[str]) -> frozenset[str]:
    n = HANDLE_FRAGMENT_CHARS
    return frozenset(h[i : i + n] for h in handles for i in range(max(0, len(h) - n) + 1))


def _leaks(token: str, fragments: frozenset[str]) -> bool:
    n = HANDLE_FRAGMENT_CHARS
    for text in {token, urllib.parse.unquote(token)}:
        if any(text[i : i + n] in fragments for i in range(len(text) - n + 1)):
            return True
    return False


def _redact(value: Any, handles: set[str], fragments: Callable[[], frozenset[str]]) -> Any:
    if isinstance(value, str):
        text = str(value)
        for handle in handles:
            if handle in text:
                text = text.replace(handle, REDACTED)
        if handles and _TOKEN.search(text):
            known = fragments()
            text = _TOKEN.sub(lambda m: REDACTED if _leaks(m.group(0), known) else m.group(0), text)
        return value if text == value else text  # a StrEnum stays itself
    if isinstance(value, dict):
        return {k: _redact(v, handles, fragments) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, handles, fragments) for v in value]
    return value


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
    ) -> None:
        """``acknowledge``, when given, takes the messages to delete instead of a
        DeleteMessageBatch per invocation (see ``Dispatcher``)."""
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
        response = await self.sqs.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=count,
            WaitTimeSeconds=wait_s,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        messages: list[dict[str, Any]] = [dict(m) for m in response.get("Messages", [])]
        return messages

    async def _deliver(self, messages: list[dict[str, Any]]) -> None:
        received_ns = self.clock()
        records = tuple(
            Record(
                message_id=m["MessageId"],
                receive_count=int(m.get("Attributes", {}).get("ApproximateReceiveCount", "1")),
                business_id=business_id_of(m["Body"]),
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
            # The run's deadline: the invocation still happened, and its writes
            # are on record. Count it as a delivery; acknowledge nothing.
            with anyio.CancelScope(shield=True):
                reply = await self.environment.cut_off(request_id)
                self._record(request_id, records, received_ns, reply, messages, set(), cut_off=True)
            raise
        writes = tuple(reply.observed.writes)
        self.on_writes(writes, records)

        failed: set[str] = set()
        invalid = False
        if reply.ok and self.settings.report_batch_item_failures:
            named = batch_item_failures(reply.result, {r.message_id for r in records})
            invalid = named is None
            failed = {r.message_id for r in records} if named is None else named
        if not reply.ok:
            failed = {r.message_id for r in records}
            self.progress.handler_errors += 1
        to_delete = [m for m in messages if m["MessageId"] not in failed]
        business = {r.message_id: r.business_id for r in records}
        if self.acknowledge is not None:
            # Batched across invocations: the acknowledger settles them once deleted.
            self.progress.in_flight -= len(messages)
            self._record(request_id, records, received_ns, reply, messages, failed, invalid=invalid)
            await self.acknowledge(to_delete, business)
            return
        acked = await self._delete(to_delete)
        self.progress.in_flight -= len(messages)
        self._record(request_id, records, received_ns, reply, messages, failed, invalid=invalid)
        for message_id in acked:
            self.settlement.settle(message_id, business[message_id])

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


RECEIVE_MAX = 10
"""ReceiveMessage's and DeleteMessageBatch's most entries per call (SQS's limit)."""
ACKNOWLEDGERS = 2
"""Concurrent DeleteMessageBatch calls; acknowledgements queue up while they run."""
ACK_LINGER_S = 0.01
"""How long (in seconds) an acknowledgement waits for others to share its DeleteMessageBatch,
while invocations are in progress; part of the measured ack and end-to-end latency."""


def dispatches(settings: ConsumerSettings) -> bool:
    """Whether ``Dispatcher`` can serve these settings: one ReceiveMessage fills a batch."""
    return settings.batching_window_s <= 0 and settings.batch_size <= RECEIVE_MAX


class _Slots:
    """Batches the environments may hold at once: one running per environment, plus
    the batches received for them that wait for one to be free."""

    def __init__(self, count: int) -> None:
        self.free = count
        self.waiting = 0
        """Batches received and not yet taken by an environment."""
        self._changed = anyio.Event()

    async def take(self, full: int) -> int:
        """Wait for room for ``full`` batches (one full ReceiveMessage), or for any
        room once no received batch is left waiting (an environment is idle)."""
        while not (self.free >= full or (self.free and not self.waiting)):
            await self._changed.wait()
        taken = min(full, self.free)
        self.free -= taken
        return taken

    def give(self, count: int) -> None:
        self.free += count
        self.changed()

    def changed(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()


@dataclass(frozen=True)
class _Pending:
    message_id: str
    receipt_handle: str
    business_id: str | None
    requested_ns: int
    """When the invocation asked for the acknowledgement (ack latency starts here)."""


class Dispatcher:
    """The event source mapping's pollers for all environments of a run, as Lambda's do.

    One receiver long-polls ReceiveMessage for up to 10 messages (never more than
    the environments can take: one batch running per environment plus, with
    ``lookahead``, one full receive's worth waiting for them; it waits for room for
    a full receive unless an environment has nothing to do), cuts them into batches of
    ``batch_size`` and hands each batch to the next free environment. Successful
    deliveries are acknowledged by DeleteMessageBatch calls of up to 10 entries
    shared across invocations: while one call is in flight the next ones queue,
    so under load a call carries several invocations' messages and at low load
    each goes at once. A message is settled when its delete succeeded, and its
    acknowledgement latency runs from the invocation's end to that moment.

    ``lookahead=False`` receives only for free environments, so no message waits
    in the harness while its visibility timeout runs (the engine chooses it when
    handlers are slow against the visibility timeout).

    Stopping: the receiver stops between polls once ``stopping`` is set; batches
    already received are still delivered, every invocation in progress finishes and
    its acknowledgements are sent before ``run`` returns.
    """

    def __init__(self, pollers: list[Poller], *, lookahead: bool = True) -> None:
        self.pollers = pollers
        first = pollers[0]
        self.sqs = first.sqs
        self.queue_url = first.queue_url
        self.settings = first.settings
        self.history = first.history
        self.settlement = first.settlement
        self.progress = first.progress
        self.stopping = first.stopping
        self.clock = first.clock
        self.batch_size = max(1, min(RECEIVE_MAX, self.settings.batch_size))
        full = -(-RECEIVE_MAX // self.batch_size)
        self.slots = _Slots(len(pollers) + (full if lookahead else 0))
        self.calls = {"receive": 0, "delete": 0}
        """ReceiveMessage and DeleteMessageBatch calls made (for the benchmark)."""
        self._acks_send, self._acks_receive = anyio.create_memory_object_stream[_Pending](math.inf)

    async def run(self) -> None:
        batches_send, batches_receive = anyio.create_memory_object_stream[list[dict[str, Any]]](
            math.inf
        )
        async with anyio.create_task_group() as acknowledgers:
            for _ in range(ACKNOWLEDGERS):
                acknowledgers.start_soon(self._acknowledger, self._acks_receive.clone())
            self._acks_receive.close()
            async with self._acks_send, anyio.create_task_group() as tg:
                for poller in self.pollers:
                    poller.acknowledge = self._acknowledge
                    tg.start_soon(self._worker, poller, batches_receive.clone())
                batches_receive.close()
                await self._receiver(batches_send)

    async def _receiver(self, batches: anyio.abc.ObjectSendStream[list[dict[str, Any]]]) -> None:
        async with batches:
            while not self.stopping.is_set():
                taken = await self.slots.take(-(-RECEIVE_MAX // self.batch_size))
                if self.stopping.is_set():
                    self.slots.give(taken)
                    break
                self.calls["receive"] += 1
                messages = await self.pollers[0]._poll(
                    min(RECEIVE_MAX, taken * self.batch_size), POLL_WAIT_S
                )
                cut = [
                    messages[i : i + self.batch_size]
                    for i in range(0, len(messages), self.batch_size)
                ]
                self.slots.give(taken - len(cut))
                self.slots.waiting += len(cut)
                for batch in cut:
                    await batches.send(batch)

    async def _worker(
        self, poller: Poller, batches: anyio.abc.ObjectReceiveStream[list[dict[str, Any]]]
    ) -> None:
        async with batches:
            async for batch in batches:
                self.slots.waiting -= 1
                self.slots.changed()
                try:
                    await poller._deliver(batch)
                finally:
                    self.slots.give(1)

    async def _acknowledge(
        self, messages: list[dict[str, Any]], business: dict[str, str | None]
    ) -> None:
        requested_ns = self.clock()
        for m in messages:
            await self._acks_send.send(
                _Pending(m["MessageId"], m["ReceiptHandle"], business[m["MessageId"]], requested_ns)
            )

    async def _acknowledger(self, pending: MemoryObjectReceiveStream[_Pending]) -> None:
        async with pending:
            async for first in pending:
                batch = [first]
                # Wait a little for other invocations' acknowledgements, but only while
                # some are in progress: a lone message is acknowledged at once.
                with anyio.move_on_after(ACK_LINGER_S):
                    while len(batch) < RECEIVE_MAX:
                        try:
                            batch.append(pending.receive_nowait())
                            continue
                        except anyio.WouldBlock:
                            if not self.progress.in_flight:
                                break
                        except anyio.EndOfStream:
                            break
                        try:
                            batch.append(await pending.receive())
                        except anyio.EndOfStream:
                            break
                await self._delete(batch)

    async def _delete(self, batch: list[_Pending]) -> None:
        self.calls["delete"] += 1
        response = await self.sqs.delete_message_batch(
            QueueUrl=self.queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": p.receipt_handle} for i, p in enumerate(batch)
            ],
        )
        acked_ns = self.clock()
        ok = {entry["Id"] for entry in response.get("Successful", [])}
        acked = [p for i, p in enumerate(batch) if str(i) in ok]
        for p in acked:
            self.history.acks.append(Ack(p.message_id, acked_ns, p.requested_ns))
        self.progress.acked += len(acked)
        for p in acked:
            self.settlement.settle(p.message_id, p.business_id)


async def watch_dead_letters(
    sqs: SQSClient,
    dlq_url: str,
    history: History,
    settlement: Settlement,
    progress: Progress,
    clock: Callable[[], int] = time.monotonic_ns,
) -> None:
    """Record each message that reaches the DLQ (runs until cancelled)."""
    seen: set[str] = set()
    while True:
        response = await sqs.receive_message(
            QueueUrl=dlq_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=POLL_WAIT_S,
            VisibilityTimeout=DLQ_HOLD_S,
            AttributeNames=["All"],
        )
        for message in response.get("Messages", []):
            message_id = message["MessageId"]
            if message_id in seen:
                continue
            seen.add(message_id)
            count = int(message.get("Attributes", {}).get("ApproximateReceiveCount", "0"))
            history.dead_letters.append(DeadLetter(message_id, count, clock()))
            progress.dead_lettered += 1
            settlement.settle(message_id, business_id_of(message.get("Body", "")))
