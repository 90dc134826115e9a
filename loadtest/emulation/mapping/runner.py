"""The runner: Lambda's SQS event source mapping, emulated against a real queue.

One poller per execution environment (``loadtest.emulation.mapping.poller``), or one
receiver for all of them (``Dispatcher``, in ``loadtest.emulation.mapping.dispatcher``,
with the FIFO group rules); the run's accounting of what is sent and settled
(``loadtest.emulation.mapping.settlement``); and here the DLQ watcher, which records what
the queue's redrive policy moves to the DLQ. On an exception, a timeout or a crash nothing
is deleted, so the messages reappear after the visibility timeout and eventually reach
the DLQ.

Owns the DLQ watcher and is the mapping's one entry point: the names the engine uses are
re-exported here (receipt-handle redaction from ``loadtest.emulation.mapping.redaction``
too). The engine owns the task group the pollers and the watcher run in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from loadtest.emulation.mapping.dispatcher import Dispatcher as Dispatcher
from loadtest.emulation.mapping.dispatcher import dispatches as dispatches
from loadtest.emulation.mapping.events import business_id_of
from loadtest.emulation.mapping.poller import POLL_WAIT_S as POLL_WAIT_S
from loadtest.emulation.mapping.poller import Acknowledge as Acknowledge
from loadtest.emulation.mapping.poller import Poller as Poller
from loadtest.emulation.mapping.redaction import REDACTED as REDACTED
from loadtest.emulation.mapping.redaction import redact as redact
from loadtest.emulation.mapping.settlement import FIFO_REPEAT_S as FIFO_REPEAT_S
from loadtest.emulation.mapping.settlement import Progress as Progress
from loadtest.emulation.mapping.settlement import Settlement as Settlement
from loadtest.model.history.log import DeadLetter, History
from loadtest.model.scenario.body import FLAT, BodyShape

if TYPE_CHECKING:
    from types_aiobotocore_sqs.client import SQSClient

DLQ_HOLD_S = 43_200
"""Visibility timeout (in seconds) the DLQ watcher sets so it sees each dead letter once."""


async def watch_dead_letters(
    sqs: SQSClient,
    dlq_url: str,
    history: History,
    settlement: Settlement,
    progress: Progress,
    clock: Callable[[], int] = time.monotonic_ns,
    body: BodyShape = FLAT,
) -> None:
    """Record each message that reaches the DLQ (runs until cancelled); ``body`` says where
    a message's body carries its business id."""
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
            settlement.settle(message_id, business_id_of(message.get("Body", ""), body))
