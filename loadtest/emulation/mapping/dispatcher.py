"""The event source mapping's pollers for all environments of a run: one receiver, batches
cut per environment, acknowledgements shared across invocations; and, on a FIFO queue, the
mapping's group rules.

Owns ``Dispatcher`` and the FIFO cutting of a receive into runs (``fifo_runs``). Drives
``Poller`` objects (``loadtest.emulation.mapping.poller``: their delivery and recording)
and must not receive for or deliver to anything else.

FIFO. SQS already hides every other message of a group while one of its messages is in
flight (moto too: verified in ``tests/backend/test_backend_fifo.py``), but one receive may
return several messages of a group, and cutting it into batches for several environments
would run them at once and out of order::

    receive -> [A1, A2, B1], batch_size 1
    standard:  env0 <- [A1]   env1 <- [A2]   env2 <- [B1]     A2 may finish before A1
    FIFO:      env0 <- [A1] then [A2]        env1 <- [B1]     one batch of A at a time

So on a FIFO queue the batches of a receive that share a group form one run, delivered in
order by one environment; if a batch of a run is not acknowledged in full, the rest of the
run is not delivered: those messages come back, in order, after the visibility timeout (as
the group stays blocked on the queue meanwhile). A later run holding a group whose run is
still going waits for it while that run's messages are invisible, so at most one batch per
group is in flight even on a backend that does not block groups itself. Once the
visibility timeout has passed, SQS hands the group out again and Lambda invokes again, the
first invocation still running: that redelivery is what a FIFO queue does not prevent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from loadtest.model.history.log import Ack
from loadtest.model.scenario.loading import ConsumerSettings

if TYPE_CHECKING:
    from loadtest.emulation.mapping.poller import Poller

Message = dict[str, Any]
Batch = list[Message]
Run = list[Batch]
"""Batches one environment delivers in order (one batch, except on a FIFO queue)."""

RECEIVE_MAX = 10
"""ReceiveMessage's and DeleteMessageBatch's most entries per call (SQS's limit)."""
ACKNOWLEDGERS = 2
"""Concurrent DeleteMessageBatch calls; one gathers the next batch while the other's call runs."""
ACK_LINGER_S = 0.025
"""At most how long (in seconds) an acknowledgement waits for others to fill its
DeleteMessageBatch, while invocations are in progress; part of the measured ack and
end-to-end latency."""
ACK_LINGER_SHARE = 0.01
"""The linger never exceeds this share of the visibility timeout, so waiting to share a
call cannot bring a handled message close to reappearing."""


def ack_linger_s(visibility_timeout_s: float) -> float:
    """How long (in seconds) the oldest pending acknowledgement may wait for a fuller
    DeleteMessageBatch, for a queue with this visibility timeout."""
    return max(0.0, min(ACK_LINGER_S, ACK_LINGER_SHARE * visibility_timeout_s))


def group_of(message: Message) -> str | None:
    """A received message's ``MessageGroupId`` (FIFO queues only)."""
    group = message.get("Attributes", {}).get("MessageGroupId")
    return group if isinstance(group, str) else None


def fifo_runs(messages: list[Message], batch_size: int) -> list[Run]:
    """Cut one FIFO receive into batches of ``batch_size`` in receive order, and join the
    batches that share a message group into one run (kept in order)."""
    batches = [messages[i : i + batch_size] for i in range(0, len(messages), batch_size)]
    runs: list[Run] = []
    run_of_group: dict[str, int] = {}
    for batch in batches:
        groups = {g for g in map(group_of, batch) if g is not None}
        joined = sorted({run_of_group[g] for g in groups if g in run_of_group})
        if not joined:
            runs.append([batch])
            target = len(runs) - 1
        else:
            target = joined[0]
            for other in reversed(joined[1:]):  # a batch bridging two runs merges them
                runs[target].extend(runs[other])
                runs[other] = []
                for g, index in run_of_group.items():
                    if index == other:
                        run_of_group[g] = target
            runs[target].append(batch)
        for g in groups:
            run_of_group[g] = target
    return [run for run in runs if run]


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
        self._changed: anyio.Event | None = None
        """Set at the next change; made by the first task to wait for it (most changes
        come with no task waiting: no event for those)."""

    async def take(self, full: int) -> int:
        """Wait for room for ``full`` batches (one full ReceiveMessage), or for any
        room once no received batch is left waiting (an environment is idle)."""
        while not (self.free >= full or (self.free and not self.waiting)):
            if self._changed is None:
                self._changed = anyio.Event()
            await self._changed.wait()
        taken = min(full, self.free)
        self.free -= taken
        return taken

    def give(self, count: int) -> None:
        self.free += count
        self.changed()

    def changed(self) -> None:
        changed, self._changed = self._changed, None
        if changed is not None:
            changed.set()


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
    shared across invocations: a call goes once it holds 10, once its oldest entry
    has waited ``ack_linger_s`` (a bound under the visibility timeout), or at once
    when no invocation is in progress to add to it (a lone acknowledgement is not
    delayed). One acknowledger gathers at a time while another's call is in flight::

        acks    a1 . a2 ...... a3 | a4 .. a13 at once
        call 1  [a1 a2 a3]          goes when a1 has waited the linger
        call 2  [a4 .. a13]         goes as it reaches 10, call 1 still in flight

    A message is settled when its delete succeeded, and its acknowledgement latency
    runs from the invocation's end to that moment (the wait to share a call included).

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
        self.fifo = self.settings.fifo
        self._groups_busy: dict[str, tuple[anyio.Event, int]] = {}
        """FIFO: groups whose run is being delivered: the event set when it ends, and until
        when (``clock``, in ns) its messages stay invisible."""
        self.calls = {"receive": 0, "delete": 0}
        """ReceiveMessage and DeleteMessageBatch calls made (for the benchmark)."""
        self._acks_send, self._acks_receive = anyio.create_memory_object_stream[_Pending](math.inf)
        self._linger_ns = int(ack_linger_s(self.settings.visibility_timeout_s) * 1e9)
        self._gathering = anyio.Lock()
        """Held by the acknowledger filling the next DeleteMessageBatch."""

    async def run(self) -> None:
        batches_send, batches_receive = anyio.create_memory_object_stream[Run](math.inf)
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

    async def _receiver(self, batches: MemoryObjectSendStream[Run]) -> None:
        async with batches:
            while not self.stopping.is_set():
                taken = await self.slots.take(-(-RECEIVE_MAX // self.batch_size))
                if self.stopping.is_set():
                    self.slots.give(taken)
                    break
                self.calls["receive"] += 1
                first = self.pollers[0]
                messages = await first._poll(
                    min(RECEIVE_MAX, taken * self.batch_size), first.poll_wait_s
                )
                cut = (
                    fifo_runs(messages, self.batch_size)
                    if self.fifo
                    else [
                        [messages[i : i + self.batch_size]]
                        for i in range(0, len(messages), self.batch_size)
                    ]
                )
                self.slots.give(taken - len(cut))
                self.slots.waiting += len(cut)
                for run in cut:
                    batches.send_nowait(run)  # unbounded: no need to yield to the loop per run

    async def _worker(self, poller: Poller, runs: anyio.abc.ObjectReceiveStream[Run]) -> None:
        async with runs:
            async for run in runs:
                self.slots.waiting -= 1
                self.slots.changed()
                try:
                    await self._deliver_run(poller, run)
                finally:
                    self.slots.give(1)

    async def _deliver_run(self, poller: Poller, run: Run) -> None:
        if not self.fifo:
            for batch in run:
                await poller._deliver(batch)
            return
        groups = {g for batch in run for g in map(group_of, batch) if g is not None}
        for group in sorted(groups):
            while group in self._groups_busy:
                ended, invisible_until_ns = self._groups_busy[group]
                with anyio.move_on_after(max(0.0, (invisible_until_ns - self.clock()) / 1e9)):
                    await ended.wait()
                if self._groups_busy.get(group, (None, 0))[0] is ended:
                    break  # its messages are visible again: SQS hands the group out anew
        ended = anyio.Event()
        invisible_until_ns = self.clock() + int(self.settings.visibility_timeout_s * 1e9)
        for group in groups:
            self._groups_busy[group] = (ended, invisible_until_ns)
        try:
            for batch in run:
                if not await poller._deliver(batch):
                    break  # the rest come back after the visibility timeout, in order
        finally:
            for group in groups:
                if self._groups_busy.get(group, (None, 0))[0] is ended:
                    del self._groups_busy[group]
            ended.set()

    async def _acknowledge(
        self, messages: list[dict[str, Any]], business: dict[str, str | None]
    ) -> None:
        requested_ns = self.clock()
        for m in messages:  # unbounded: no need to yield to the loop per message
            self._acks_send.send_nowait(
                _Pending(m["MessageId"], m["ReceiptHandle"], business[m["MessageId"]], requested_ns)
            )

    async def _acknowledger(self, pending: MemoryObjectReceiveStream[_Pending]) -> None:
        async with pending:
            while True:
                async with self._gathering:
                    try:
                        batch = [await pending.receive()]
                    except anyio.EndOfStream:
                        return
                    await self._gather(pending, batch)
                await self._delete(batch)

    async def _gather(
        self, pending: MemoryObjectReceiveStream[_Pending], batch: list[_Pending]
    ) -> None:
        """Add pending acknowledgements to ``batch`` until it holds 10, its oldest has waited
        the linger, or none can come (no invocation in progress, or the run is ending)."""
        deadline_ns = batch[0].requested_ns + self._linger_ns
        while len(batch) < RECEIVE_MAX:
            try:
                batch.append(pending.receive_nowait())
                continue
            except anyio.WouldBlock:
                if not self.progress.in_flight:
                    return
            except anyio.EndOfStream:
                return
            wait_s = (deadline_ns - self.clock()) / 1e9
            if wait_s <= 0:
                return
            with anyio.move_on_after(wait_s):
                try:
                    batch.append(await pending.receive())
                except anyio.EndOfStream:
                    return
                continue
            return

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
