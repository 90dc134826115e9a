"""The publishing variants (publish-before-guard, publish-after-guard, outbox) as plain
handlers: called directly with boto3 against the embedded backend, no loadtest run.

Each test makes its own table and a FIFO topic whose FIFO queue subscription (raw
delivery) holds what the topic really delivered, so a publish the topic dropped as a
duplicate is visible as its absence.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

import consumer._events
import consumer._orders
from consumer import conditional, outbox, publish_after_guard, publish_before_guard
from consumer._events import TopicNotConfiguredError
from loadtest.aws.clients import EMBEDDED_CREDENTIALS

REGION = "us-east-1"


@dataclass(frozen=True)
class Sinks:
    table: str
    topic_arn: str
    queue_url: str
    clients: dict[str, Any]

    def delivered(self) -> list[dict[str, Any]]:
        """Every event the topic delivered to its subscription, in order."""
        sqs = self.clients["sqs"]
        found: list[dict[str, Any]] = []
        while True:
            answer = sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            messages = answer.get("Messages", [])
            if not messages:
                return found
            for message in messages:
                found.append(json.loads(message["Body"]))
                sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])

    def item(self, key: str) -> dict[str, Any] | None:
        answer = self.clients["dynamodb"].get_item(
            TableName=self.table, Key={"id": {"S": key}}, ConsistentRead=True
        )
        item: dict[str, Any] | None = answer.get("Item")
        return item


@pytest.fixture
def sinks(backend_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sinks]:
    for name, value in {
        **dict(EMBEDDED_CREDENTIALS),
        "AWS_ENDPOINT_URL": backend_url,
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
    }.items():
        monkeypatch.setenv(name, value)
    # The variants create their clients once per process; these tests change endpoints.
    monkeypatch.setattr(consumer._orders, "_client", None)
    monkeypatch.setattr(consumer._events, "_client", None)
    clients: dict[str, Any] = {
        s: boto3.client(s, region_name=REGION) for s in ("dynamodb", "sns", "sqs")
    }
    stem = f"publishing-{uuid.uuid4().hex[:8]}"
    clients["dynamodb"].create_table(
        TableName=stem,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    topic_arn = clients["sns"].create_topic(Name=f"{stem}.fifo", Attributes={"FifoTopic": "true"})[
        "TopicArn"
    ]
    queue_url = clients["sqs"].create_queue(
        QueueName=f"{stem}-capture.fifo", Attributes={"FifoQueue": "true"}
    )["QueueUrl"]
    queue_arn = clients["sqs"].get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    clients["sns"].subscribe(
        TopicArn=topic_arn,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    monkeypatch.setenv("TABLE_NAME", stem)
    monkeypatch.setenv("ORDERS_TOPIC_ARN", topic_arn)
    yield Sinks(stem, topic_arn, queue_url, clients)
    clients["sns"].delete_topic(TopicArn=topic_arn)
    clients["sqs"].delete_queue(QueueUrl=queue_url)
    clients["dynamodb"].delete_table(TableName=stem)


def event(order_id: str, quantity: int, message_id: str = "m-1") -> dict[str, Any]:
    return {
        "Records": [
            {
                "messageId": message_id,
                "receiptHandle": f"h-{message_id}",
                "body": json.dumps({"id": order_id, "quantity": quantity}),
                "attributes": {"ApproximateReceiveCount": "1"},
            }
        ]
    }


def placed(order_id: str, quantity: int) -> dict[str, Any]:
    return {
        "type": "OrderPlaced",
        "id": order_id,
        "quantity": quantity,
        "total_cents": quantity * 250 + 100,
    }


def stored(order_id: str, quantity: int) -> dict[str, Any]:
    return {
        "id": {"S": order_id},
        "quantity": {"N": str(quantity)},
        "total_cents": {"N": str(quantity * 250 + 100)},
    }


def lab_result(order_id: str, quantity: int, *, duplicate: bool) -> dict[str, Any]:
    return {
        "id": order_id,
        "quantity": quantity,
        "processed": not duplicate,
        "duplicate": duplicate,
    }


# --- publish-after-guard --------------------------------------------------------------


def test_publish_after_guard_announces_a_stored_order_once(sinks: Sinks) -> None:
    first = publish_after_guard.handler(event("o-1", 4), None)
    again = publish_after_guard.handler(event("o-1", 4, "m-2"), None)
    assert first == lab_result("o-1", 4, duplicate=False)
    assert again == lab_result("o-1", 4, duplicate=True)
    assert sinks.item("o-1") == stored("o-1", 4)
    assert sinks.delivered() == [placed("o-1", 4)]


def test_publish_after_guard_loses_the_event_of_a_put_whose_publish_never_ran(
    sinks: Sinks,
) -> None:
    # The first delivery's put, then its process died: what a crash mid-handler leaves.
    assert conditional.put_order("o-2", 3) is True
    redelivered = publish_after_guard.handler(event("o-2", 3), None)
    assert redelivered == lab_result("o-2", 3, duplicate=True)  # acknowledged
    assert sinks.item("o-2") == stored("o-2", 3)
    assert sinks.delivered() == []  # and never announced


def test_publish_after_guard_refuses_other_details_without_publishing(sinks: Sinks) -> None:
    publish_after_guard.handler(event("o-3", 2), None)
    with pytest.raises(ValueError, match="different details"):
        publish_after_guard.handler(event("o-3", 5, "m-2"), None)
    assert sinks.item("o-3") == stored("o-3", 2)
    assert sinks.delivered() == [placed("o-3", 2)]


# --- publish-before-guard -------------------------------------------------------------


def test_publish_before_guard_announces_every_copy(sinks: Sinks) -> None:
    results = [publish_before_guard.handler(event("o-4", 1, f"m-{n}"), None) for n in range(3)]
    assert [r["duplicate"] for r in results] == [False, True, True]
    assert sinks.item("o-4") == stored("o-4", 1)  # the table is right ...
    assert sinks.delivered() == [placed("o-4", 1)] * 3  # ... the topic got three


# --- outbox ---------------------------------------------------------------------------


def test_outbox_stores_order_and_row_and_relays_once(sinks: Sinks) -> None:
    first = outbox.handler(event("o-5", 4), None)
    again = outbox.handler(event("o-5", 4, "m-2"), None)
    assert first == lab_result("o-5", 4, duplicate=False)
    assert again == lab_result("o-5", 4, duplicate=True)
    assert sinks.item("o-5") == stored("o-5", 4)
    row = sinks.item("outbox#o-5")
    assert row is not None and row["status"] == {"S": "sent"}
    assert json.loads(row["message"]["S"]) == placed("o-5", 4)
    assert sinks.delivered() == [placed("o-5", 4)]


def test_outbox_redelivery_relays_the_row_a_crash_left_pending(sinks: Sinks) -> None:
    # The first delivery's transaction, then its process died before the relay.
    assert outbox.store("o-6", 2) is True
    pending = sinks.item("outbox#o-6")
    assert pending is not None and pending["status"] == {"S": "pending"}
    assert sinks.delivered() == []
    redelivered = outbox.handler(event("o-6", 2), None)
    assert redelivered == lab_result("o-6", 2, duplicate=True)
    assert sinks.delivered() == [placed("o-6", 2)]
    sent = sinks.item("outbox#o-6")
    assert sent is not None and sent["status"] == {"S": "sent"}


def test_outbox_row_relayed_twice_reaches_the_fifo_topic_once(sinks: Sinks) -> None:
    outbox.handler(event("o-7", 3), None)
    # A second relay of the same row (a crash after the publish, before the mark):
    # the same deduplication id, dropped by the topic.
    sinks.clients["dynamodb"].update_item(
        TableName=sinks.table,
        Key={"id": {"S": "outbox#o-7"}},
        UpdateExpression="SET #s = :p",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":p": {"S": "pending"}},
    )
    outbox.handler(event("o-7", 3, "m-2"), None)
    assert sinks.delivered() == [placed("o-7", 3)]


def test_outbox_refuses_other_details(sinks: Sinks) -> None:
    outbox.handler(event("o-8", 2), None)
    with pytest.raises(outbox.ConflictingOrderError):
        outbox.handler(event("o-8", 6, "m-2"), None)
    assert sinks.item("o-8") == stored("o-8", 2)
    assert sinks.delivered() == [placed("o-8", 2)]


def test_outbox_batch_relays_each_record(sinks: Sinks) -> None:
    batch = {"Records": [event(f"o-9{n}", n + 1, f"m-{n}")["Records"][0] for n in range(3)]}
    answer = outbox.handler(batch, None)
    assert answer["batchItemFailures"] == []
    assert sorted(e["id"] for e in sinks.delivered()) == ["o-90", "o-91", "o-92"]


# --- configuration --------------------------------------------------------------------


@pytest.mark.parametrize("module", [publish_after_guard, publish_before_guard, outbox])
def test_a_variant_without_its_topic_says_which_variable_is_missing(
    sinks: Sinks, monkeypatch: pytest.MonkeyPatch, module: Any
) -> None:
    monkeypatch.delenv("ORDERS_TOPIC_ARN")
    with pytest.raises(TopicNotConfiguredError, match="ORDERS_TOPIC_ARN"):
        module.handler(event("o-10", 1), None)
