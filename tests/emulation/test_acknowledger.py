"""The dispatcher's acknowledgements shared across invocations, on the embedded backend.

Messages are sent to and received from a real queue, then handed to the dispatcher's
acknowledgers as invocations would hand them: the DeleteMessageBatch calls they make
are read back from the history (the acknowledgements of one call share its moment).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from types import SimpleNamespace
from typing import Any, cast

import anyio
import pytest

from loadtest.aws import clients as aws
from loadtest.emulation.mapping import dispatcher as dispatcher_module
from loadtest.emulation.mapping.dispatcher import ACK_LINGER_S, Dispatcher, ack_linger_s
from loadtest.emulation.mapping.runner import Poller, Progress, Settlement
from loadtest.model.history.log import History
from loadtest.model.scenario.loading import ConsumerSettings


def test_the_linger_is_a_small_share_of_the_visibility_timeout() -> None:
    assert ack_linger_s(30) == ACK_LINGER_S
    assert ack_linger_s(1) == pytest.approx(0.01)
    assert ack_linger_s(0) == 0


def _acknowledge(url: str, count: int, *, in_flight: int) -> tuple[History, Dispatcher, int]:
    """Receive ``count`` messages of a fresh queue and acknowledge them one invocation after
    another, with ``in_flight`` invocations in progress meanwhile; the history, the
    dispatcher and what the queue holds afterwards. The acknowledgements stop coming
    (the stream closes) right after the last one."""

    async def main() -> tuple[History, Dispatcher, int]:
        target = aws.Target.resolve(aws.BackendKind.ENDPOINT, url)
        async with aws.clients(target) as (sqs, _):
            queue_url = (await sqs.create_queue(QueueName=f"loadtest-ack-{aws.new_run_id()}"))[
                "QueueUrl"
            ]
            try:
                for start in range(0, count, 10):
                    await sqs.send_message_batch(
                        QueueUrl=queue_url,
                        Entries=[
                            {"Id": str(n), "MessageBody": f"m{n}"}
                            for n in range(start, min(count, start + 10))
                        ],
                    )
                received: list[dict[str, Any]] = []
                while len(received) < count:
                    response = await sqs.receive_message(
                        QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=1
                    )
                    received += [dict(m) for m in response.get("Messages", [])]
                history = History()
                progress = Progress(in_flight=in_flight)
                poller = SimpleNamespace(
                    sqs=sqs,
                    queue_url=queue_url,
                    settings=ConsumerSettings(),
                    history=history,
                    settlement=Settlement(),
                    progress=progress,
                    stopping=anyio.Event(),
                    clock=time.monotonic_ns,
                )
                dispatcher = Dispatcher([cast(Poller, poller)])
                with anyio.fail_after(10):
                    async with anyio.create_task_group() as tg:
                        for _ in range(dispatcher_module.ACKNOWLEDGERS):
                            tg.start_soon(
                                dispatcher._acknowledger, dispatcher._acks_receive.clone()
                            )
                        dispatcher._acks_receive.close()
                        async with dispatcher._acks_send:
                            for message in received:  # one invocation each, one after another
                                await dispatcher._acknowledge(
                                    [message], {message["MessageId"]: None}
                                )
                                await anyio.wait_all_tasks_blocked()
                attributes = await sqs.get_queue_attributes(
                    QueueUrl=queue_url,
                    AttributeNames=[
                        "ApproximateNumberOfMessages",
                        "ApproximateNumberOfMessagesNotVisible",
                    ],
                )
                left = sum(int(v) for v in attributes["Attributes"].values())
                return history, dispatcher, left
            finally:
                await sqs.delete_queue(QueueUrl=queue_url)

    return anyio.run(main, backend="asyncio")


def _calls(history: History) -> list[int]:
    """Entries per DeleteMessageBatch call, largest first."""
    return sorted(Counter(ack.acked_ns for ack in history.acks).values(), reverse=True)


def _linger_forever(monkeypatch: pytest.MonkeyPatch) -> None:
    """A linger far past ``_acknowledge``'s time bound: a test passes only if no call
    waits for it."""
    monkeypatch.setattr(dispatcher_module, "ACK_LINGER_S", 3600.0)
    monkeypatch.setattr(dispatcher_module, "ACK_LINGER_SHARE", math.inf)


def test_acknowledgements_fill_delete_calls_to_ten(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # While an invocation is in progress, a call waits for more up to 10, and goes then.
    _linger_forever(monkeypatch)
    history, dispatcher, left = _acknowledge(backend_url, 25, in_flight=1)
    assert _calls(history) == [10, 10, 5]
    assert dispatcher.calls["delete"] == 3
    assert len({ack.message_id for ack in history.acks}) == 25
    assert left == 0


def test_a_lone_acknowledgement_does_not_wait_for_others(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _linger_forever(monkeypatch)
    history, _, left = _acknowledge(backend_url, 1, in_flight=0)
    assert _calls(history) == [1]
    assert left == 0
