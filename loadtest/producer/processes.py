"""Several producer processes splitting one schedule (``--producers N``).

One producer process tops out at a few thousand messages per second (botocore's
per-request work: serialisation, signing, the user-agent string, parsing). With
``producers > 1`` the harness starts N child processes, each with its own SQS client,
and deals them the scheduled messages round-robin; each child runs
:func:`loadtest.producer.send.produce` on its share with the run's shared start
time, so every message keeps its intended send time (``CLOCK_MONOTONIC`` is one clock
for all processes on a host) and end-to-end latency stays measured from it.

A child is handed the schedule and the positions of its share (a ``Part``), not the
messages themselves, and reads each message as it sends it.

A child ends at once when the harness is gone (killed, with no clean-up of its own),
whatever it is doing.

The children stream what they sent (``SentMessage`` records, in batches) back over a
pipe; this module appends them to the run's history and counts them, so the history
holds every message the backend took, exactly as with one producer. Resends planned
"after completion" stay in the harness process: they wait on the harness's own
settlement. ``stop_sending`` reaches the children through a shared event.

Owns the child processes and the pipes; must not touch the produce function's entries
or anything after sending.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.synchronize
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from loadtest.aws import clients as aws
from loadtest.errors import BackendError
from loadtest.model.history.log import History, SentMessage
from loadtest.model.workload.schedule import Part, PlannedMessage, split
from loadtest.producer.send import produce
from loadtest.spool import FileFrames

if TYPE_CHECKING:
    from types_aiobotocore_sqs.client import SQSClient

FLUSH_S = 0.05
"""How often (in seconds) a child sends what it has sent so far."""
READY_TIMEOUT_S = 60.0
"""How long (in seconds) a child may take to start and open its client."""


def _child(
    conn: multiprocessing.connection.Connection,
    stop: multiprocessing.synchronize.Event,
    target: aws.Target,
    queue_url: str,
    planned: Sequence[PlannedMessage],
) -> None:
    """A producer process: open a client, say ready, wait for the start time, send."""
    _exit_with_parent()

    async def main() -> None:
        async with aws.clients(target, pool=16) as (sqs, _):
            conn.send("ready")
            start_ns: int = await anyio.to_thread.run_sync(conn.recv)
            history = History(frames=FileFrames)
            stop_sending = anyio.Event()
            done = anyio.Event()

            async def forward() -> None:
                shipped = 0
                while True:
                    finished = done.is_set()
                    if stop.is_set():
                        stop_sending.set()
                    if len(history.sent) > shipped:
                        conn.send(history.sent[shipped:])
                        shipped = len(history.sent)
                    if finished:
                        conn.send(None)
                        return
                    with anyio.move_on_after(FLUSH_S):
                        await done.wait()

            async def send() -> None:
                try:
                    await produce(
                        sqs,
                        queue_url,
                        planned,
                        history,
                        start_ns,
                        _ignore,
                        _never,
                        stop_sending=stop_sending,
                    )
                finally:
                    done.set()

            async with anyio.create_task_group() as tg:
                tg.start_soon(forward)
                tg.start_soon(send)

    anyio.run(main)


def _exit_with_parent() -> None:
    """End this process at once when the harness that started it is gone, whatever it is
    doing: a killed harness (SIGKILL: no clean-up of its own) leaves no producer sending to,
    or retrying against, a backend that is gone too. A daemon thread waits on the parent's
    sentinel (``multiprocessing.parent_process``: ready once the parent has ended)."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="loadtest-producer-parent", daemon=True).start()


def share(scheduled: Part, k: int, processes: int) -> Part:
    """The ``k``-th of ``processes`` producers' share: every ``processes``-th message."""
    return Part(scheduled.planned, scheduled.positions[k::processes])


class ProducerError(BackendError):
    """A producer process could not start or ended before sending its share."""


def _ignore(message_ids: list[str]) -> None:
    del message_ids


async def _never(business_id: str) -> None:
    raise AssertionError(f"after-completion resend of {business_id} sent by a child producer")


@dataclass
class ProducerPool:
    """N started producer processes, each holding its share of the scheduled messages."""

    scheduled: int
    """Messages the children were dealt (those not waiting for a first copy)."""
    _conns: list[multiprocessing.connection.Connection] = field(default_factory=list)
    _stop: multiprocessing.synchronize.Event | None = None

    async def run(
        self,
        sqs: SQSClient,
        queue_url: str,
        after_first: Sequence[PlannedMessage],
        history: History,
        start_ns: int,
        on_sent: Callable[[list[str]], None],
        first_settled: Callable[[str], Awaitable[None]],
        clock: Callable[[], int] = time.monotonic_ns,
        stop_sending: anyio.Event | None = None,
    ) -> None:
        """Start the children sending at ``start_ns``; collect what they sent; send resends."""
        assert self._stop is not None
        stop_event = self._stop
        for conn in self._conns:
            conn.send(start_ns)

        async def collect(conn: multiprocessing.connection.Connection) -> None:
            while True:
                if stop_sending is not None and stop_sending.is_set():
                    stop_event.set()  # max_backlog: the children start no further batch
                if not await anyio.to_thread.run_sync(conn.poll, FLUSH_S):
                    continue
                try:
                    sent: list[SentMessage] | None = conn.recv()
                except EOFError:
                    raise ProducerError("a producer process ended before it finished") from None
                if sent is None:
                    return
                history.sent.extend(sent)
                on_sent([m.message_id for m in sent if m.message_id])

        async with anyio.create_task_group() as tg:
            for conn in self._conns:
                tg.start_soon(collect, conn)
            if after_first:
                tg.start_soon(
                    lambda: produce(
                        sqs,
                        queue_url,
                        after_first,
                        history,
                        start_ns,
                        on_sent,
                        first_settled,
                        clock,
                        stop_sending,
                    )
                )


class Send(Protocol):
    """Sends a run's messages: :func:`produce`'s arguments, less the queue and the plan."""

    async def __call__(
        self,
        sqs: SQSClient,
        history: History,
        start_ns: int,
        on_sent: Callable[[list[str]], None],
        first_settled: Callable[[str], Awaitable[None]],
        clock: Callable[[], int],
        stop_sending: anyio.Event,
    ) -> None: ...


@asynccontextmanager
async def producing(
    processes: int, target: aws.Target, queue_url: str, planned: Sequence[PlannedMessage]
) -> AsyncIterator[Send]:
    """What sends ``planned``: this process (``processes`` 1), or that many child
    processes, started (clients open) before this yields so the run's start time is not
    spent importing boto3; they are ended on exit."""
    if processes <= 1:

        async def here(
            sqs: SQSClient,
            history: History,
            start_ns: int,
            on_sent: Callable[[list[str]], None],
            first_settled: Callable[[str], Awaitable[None]],
            clock: Callable[[], int],
            stop_sending: anyio.Event,
        ) -> None:
            await produce(
                sqs,
                queue_url,
                planned,
                history,
                start_ns,
                on_sent,
                first_settled,
                clock,
                stop_sending,
            )

        yield here
        return
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    scheduled, waiting = split(planned)
    children: list[Any] = []
    pool = ProducerPool(scheduled=len(scheduled), _stop=stop)
    try:
        for k in range(processes):
            ours, theirs = context.Pipe()
            child = context.Process(
                target=_child,
                args=(theirs, stop, target, queue_url, share(scheduled, k, processes)),
                daemon=True,
                name=f"loadtest-producer-{k}",
            )
            child.start()
            theirs.close()
            children.append(child)
            pool._conns.append(ours)
        for conn in pool._conns:
            ready = await anyio.to_thread.run_sync(conn.poll, READY_TIMEOUT_S)
            if not ready or conn.recv() != "ready":
                raise ProducerError("a producer process did not start")

        async def there(
            sqs: SQSClient,
            history: History,
            start_ns: int,
            on_sent: Callable[[list[str]], None],
            first_settled: Callable[[str], Awaitable[None]],
            clock: Callable[[], int],
            stop_sending: anyio.Event,
        ) -> None:
            await pool.run(
                sqs,
                queue_url,
                waiting,
                history,
                start_ns,
                on_sent,
                first_settled,
                clock,
                stop_sending,
            )

        yield there
    finally:
        stop.set()
        for child in children:
            await anyio.to_thread.run_sync(child.join, 5)
            if child.is_alive():
                child.terminate()
                await anyio.to_thread.run_sync(child.join, 5)
        for conn in pool._conns:
            conn.close()
