"""A finished run stops at once: a long poll in progress ends when the run's pollers are
told every message is settled, without waiting for the poll's wait to run out."""

from __future__ import annotations

from typing import Any, cast

import anyio
import pytest

from loadtest.emulation.environment.parent_environments import ExecutionEnvironment
from loadtest.emulation.mapping.dispatcher import Dispatcher
from loadtest.emulation.mapping.runner import Poller, Progress, Settlement
from loadtest.model.history.log import History
from loadtest.model.scenario.loading import ConsumerSettings


class _SilentQueue:
    """An SQS client whose ReceiveMessage never answers (a long poll on an empty queue)."""

    def __init__(self) -> None:
        self.receives = 0
        self.cancelled = 0
        self.polling = anyio.Event()

    async def receive_message(self, **_: Any) -> dict[str, Any]:
        self.receives += 1
        self.polling.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        raise AssertionError("unreachable")


def _poller(sqs: _SilentQueue, stopping: anyio.Event, batch_size: int) -> Poller:
    return Poller(
        sqs=cast(Any, sqs),
        queue_url="http://queue",
        queue_arn="arn:aws:sqs:us-east-1:000000000000:q",
        region="us-east-1",
        settings=ConsumerSettings(batch_size=batch_size),
        environment=cast(ExecutionEnvironment, None),
        history=History(),
        settlement=Settlement(),
        progress=Progress(),
        stopping=stopping,
        on_writes=lambda writes, records: None,
    )


@pytest.mark.parametrize("dispatched", [False, True], ids=["poller", "dispatcher"])
def test_stop_polling_ends_a_long_poll_in_progress(dispatched: bool) -> None:
    async def main() -> tuple[bool, _SilentQueue]:
        sqs = _SilentQueue()
        stopping = anyio.Event()
        poller = _poller(sqs, stopping, batch_size=1)
        run = Dispatcher([poller]).run if dispatched else poller.run
        with anyio.fail_after(30):  # a bound for a hang, not a measure of speed
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await sqs.polling.wait()
                # The stop flag alone is read between polls: the poll in progress goes on.
                stopping.set()
                await anyio.sleep(0.2)
                still_polling = sqs.cancelled == 0
                poller.stop_polling()  # ... until the pollers are told to stop
        return still_polling, sqs

    still_polling, sqs = anyio.run(main)
    assert still_polling
    assert (sqs.receives, sqs.cancelled) == (1, 1)
