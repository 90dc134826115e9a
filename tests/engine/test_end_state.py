"""Reading the end state: each request is bounded, not the whole scan.

A large table takes as many scan pages as it has (33,334 items are about 25 s
of pages on the embedded backend), so a run's end-state read bounds each
request; a salvage after an interrupt bounds the whole read.
"""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest

from loadtest.aws import clients as aws
from loadtest.engine.ending import read_end_state, salvage_end_state
from loadtest.errors import BackendError
from loadtest.model.history.log import EndState
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.placeholders import Sink

PAGE_S = 0.2
TIMEOUT_S = 0.5


class _Sqs:
    async def get_queue_attributes(self, **_: Any) -> dict[str, Any]:
        return {
            "Attributes": {
                "ApproximateNumberOfMessages": "0",
                "ApproximateNumberOfMessagesNotVisible": "0",
            }
        }


class _Dynamodb:
    """Four pages of one item each, every page answered after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def scan(self, **kwargs: Any) -> dict[str, Any]:
        await anyio.sleep(self.delay)
        page = int(kwargs.get("ExclusiveStartKey", {}).get("id", {}).get("S", "-1")) + 1
        out: dict[str, Any] = {"Items": [{"id": {"S": str(page)}}]}
        if page < 3:
            out["LastEvaluatedKey"] = {"id": {"S": str(page)}}
        return out


def _made() -> aws.Provisioned:
    return aws.Provisioned(queue_url="q", dlq_url="d", table_name="t")


TARGET = aws.Target(aws.BackendKind.ENDPOINT, "http://backend", "us-east-1")


def test_a_scan_longer_than_the_timeout_is_read_whole_when_each_page_answers() -> None:
    async def main() -> None:
        end = await read_end_state(_Sqs(), _Dynamodb(PAGE_S), _made(), TARGET, TIMEOUT_S)  # type: ignore[arg-type]
        assert sorted(end.table_items) == ["0", "1", "2", "3"]  # 0.8 s in all, 0.2 s a page

    anyio.run(main)


def test_a_page_that_does_not_answer_is_a_backend_error_naming_the_endpoint() -> None:
    async def main() -> None:
        with pytest.raises(BackendError, match=r"http://backend did not answer within 0\.5 s"):
            await read_end_state(_Sqs(), _Dynamodb(1.0), _made(), TARGET, TIMEOUT_S)  # type: ignore[arg-type]

    anyio.run(main)


def test_a_salvage_bounds_the_whole_read() -> None:
    async def main() -> None:
        salvaged = await salvage_end_state(_Sqs(), _Dynamodb(PAGE_S), _made(), TARGET, TIMEOUT_S)  # type: ignore[arg-type]
        assert salvaged is None

    anyio.run(main)


def test_a_salvage_reads_the_sinks_and_the_teardown_deletes_them(backend_url: str) -> None:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    names = aws.ResourceNames.for_run(aws.new_run_id(), 0)
    sinks = aws.sink_clients(target)
    made = aws.Provisioned()

    async def main() -> tuple[EndState | None, list[str]]:
        async with aws.clients(target) as (sqs, dynamodb):
            await aws.provision(
                sqs,
                dynamodb,
                names,
                visibility_timeout_s=30,
                max_receive_count=3,
                into=made,
                target=target,
            )
            await anyio.to_thread.run_sync(
                functools.partial(
                    aws.create_sinks,
                    sinks,
                    [Sink(EffectKind.TOPIC, "orders"), Sink(EffectKind.QUEUE, "outbox")],
                    names.prefix,
                    into=made.sinks,
                    target=target,
                )
            )
            values = made.sink_values()
            sinks.sns.publish(TopicArn=values["topic:orders"], Message="o-1")
            sinks.sqs.send_message(QueueUrl=values["queue_url:outbox"], MessageBody="o-2")
            end = await salvage_end_state(sqs, dynamodb, made, target, 10, sinks=sinks)
            problems = await aws.teardown(sqs, dynamodb, made, timeout_s=10, sinks=sinks)
            return end, problems

    end, problems = anyio.run(main)
    assert end is not None
    assert [(s.name, [m.payload for m in s.messages], s.complete) for s in end.sinks] == [
        ("orders", ["o-1"], True),
        ("outbox", ["o-2"], True),
    ]
    assert problems == [] and made.sinks == []
    left = sinks.sqs.list_queues(QueueNamePrefix=names.prefix).get("QueueUrls", [])
    topics = [t["TopicArn"] for t in sinks.sns.list_topics()["Topics"]]
    assert left == [] and [t for t in topics if names.prefix in t] == []
    sinks.close()
