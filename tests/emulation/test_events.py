"""loadtest.emulation.mapping.events: the Lambda SQS event and partial batch responses."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loadtest.emulation.mapping.events import (
    batch_item_failures,
    business_id_of,
    sqs_event,
    sqs_record,
)

ARN = "arn:aws:sqs:us-east-1:123456789012:labex-q05-jobs"


def received(message_id: str = "m-1", **extra: Any) -> dict[str, Any]:
    """One message as ReceiveMessage returns it (boto3 shape)."""
    message: dict[str, Any] = {
        "MessageId": message_id,
        "ReceiptHandle": f"handle-{message_id}",
        "MD5OfBody": "0123456789abcdef0123456789abcdef",
        "Body": '{"id":"dedup-order","quantity":4}',
        "Attributes": {
            "ApproximateReceiveCount": "2",
            "SentTimestamp": "1700000000000",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1700000000100",
        },
    }
    message.update(extra)
    return message


def test_record_has_lambdas_shape() -> None:
    message = received(
        MessageAttributes={
            "trace": {"StringValue": "abc", "DataType": "String"},
            "count": {"StringValue": "3", "DataType": "Number"},
        }
    )
    assert sqs_record(message, ARN, "us-east-1") == {
        "messageId": "m-1",
        "receiptHandle": "handle-m-1",
        "body": '{"id":"dedup-order","quantity":4}',
        "attributes": {
            "ApproximateReceiveCount": "2",
            "SentTimestamp": "1700000000000",
            "SenderId": "AIDAEXAMPLE",
            "ApproximateFirstReceiveTimestamp": "1700000000100",
        },
        "messageAttributes": {
            "trace": {
                "stringValue": "abc",
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": "String",
            },
            "count": {
                "stringValue": "3",
                "stringListValues": [],
                "binaryListValues": [],
                "dataType": "Number",
            },
        },
        "md5OfBody": "0123456789abcdef0123456789abcdef",
        "eventSource": "aws:sqs",
        "eventSourceARN": ARN,
        "awsRegion": "us-east-1",
    }


def test_event_wraps_records_in_order() -> None:
    event = sqs_event([received("m-1"), received("m-2")], ARN, "eu-west-1")
    assert list(event) == ["Records"]
    assert [r["messageId"] for r in event["Records"]] == ["m-1", "m-2"]
    assert {r["awsRegion"] for r in event["Records"]} == {"eu-west-1"}
    assert event["Records"][0]["messageAttributes"] == {}


def test_record_does_not_share_the_attributes_dict() -> None:
    message = received()
    record = sqs_record(message, ARN, "us-east-1")
    record["attributes"]["ApproximateReceiveCount"] = "99"
    assert message["Attributes"]["ApproximateReceiveCount"] == "2"


def test_binary_attribute_is_base64_text_as_in_lambdas_json_event() -> None:
    # boto3 returns BinaryValue as bytes; Lambda's event is JSON and carries base64 text.
    message = received(
        MessageAttributes={"blob": {"BinaryValue": b"\x00\x01\xff", "DataType": "Binary"}}
    )
    event = sqs_event([message], ARN, "us-east-1")
    assert event["Records"][0]["messageAttributes"]["blob"] == {
        "binaryValue": "AAH/",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Binary",
    }
    json.dumps(event)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('{"id":"a","quantity":1}', "a"),
        ('{"id":"b"}', "b"),
        ('{"id":7}', None),
        ('{"quantity":1}', None),
        ('["a"]', None),
        ("not json", None),
        ("", None),
    ],
)
def test_business_id_of(body: str, expected: str | None) -> None:
    assert business_id_of(body) == expected


IDS = {"m-1", "m-2", "m-3"}


@pytest.mark.parametrize(
    "result",
    [None, {}, {"batchItemFailures": []}, {"batchItemFailures": None}, "done", {"other": 1}],
)
def test_no_failures_means_every_record_succeeded(result: Any) -> None:
    assert batch_item_failures(result, IDS) == set()


def test_named_failures() -> None:
    result = {"batchItemFailures": [{"itemIdentifier": "m-1"}, {"itemIdentifier": "m-3"}]}
    assert batch_item_failures(result, IDS) == {"m-1", "m-3"}


@pytest.mark.parametrize(
    "failures",
    [
        [{"itemIdentifier": "m-9"}],
        [{"itemIdentifier": "m-1"}, {"itemIdentifier": "unknown"}],
        [{}],
        [{"id": "m-1"}],
        [{"itemIdentifier": ""}],
        [{"itemIdentifier": None}],
        ["m-1"],
        "m-1",
        {"itemIdentifier": "m-1"},
        [{"itemIdentifier": 1}],
        "",
        {},
        0,
    ],
)
def test_invalid_identifiers_fail_the_whole_batch(failures: Any) -> None:
    assert batch_item_failures({"batchItemFailures": failures}, IDS) is None
