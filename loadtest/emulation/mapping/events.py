"""The Lambda SQS event: built from ReceiveMessage output exactly as Lambda does.

Pure. See "Using Lambda with Amazon SQS" in the Lambda developer guide for the
record shape; attribute names are lower camel case in the event.
"""

from __future__ import annotations

import base64
from typing import Any

from loadtest.model.scenario.body import FLAT, BodyShape


def _base64(value: Any) -> str:
    """Lambda's JSON event carries binary values as base64 text; botocore gives bytes."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode("ascii")
    return str(value)


def _message_attributes(raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in raw.items():
        attribute: dict[str, Any] = {
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": [_base64(v) for v in value.get("BinaryListValues", [])],
            "dataType": value.get("DataType", "String"),
        }
        if "StringValue" in value:
            attribute["stringValue"] = value["StringValue"]
        if "BinaryValue" in value:
            attribute["binaryValue"] = _base64(value["BinaryValue"])
        out[name] = attribute
    return out


def sqs_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """One ``Records[]`` entry for a message returned by ReceiveMessage."""
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": _message_attributes(message.get("MessageAttributes", {})),
        "md5OfBody": message["MD5OfBody"],
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def sqs_event(messages: list[dict[str, Any]], queue_arn: str, region: str) -> dict[str, Any]:
    return {"Records": [sqs_record(m, queue_arn, region) for m in messages]}


def business_id_of(body: str, shape: BodyShape = FLAT) -> str | None:
    """The business id a body carries where ``shape`` says (by default the flat body's
    string ``id``), or None when there is none (a poison message)."""
    return shape.business_id(body)


def batch_item_failures(result: Any, message_ids: set[str]) -> set[str] | None:
    """Message ids named in a partial batch response, or None when the whole batch failed.

    As Lambda does (its guide's "Implementing partial batch responses", in
    services-sqs-errorhandling): a response without ``batchItemFailures``, or
    with an empty or null list, means every record succeeded; an identifier that
    is missing, null, empty, not a string or not in the batch, or a list that is
    not a list, makes Lambda treat the whole batch as failed.
    """
    if not isinstance(result, dict) or result.get("batchItemFailures") is None:
        return set()
    failures = result["batchItemFailures"]
    if not isinstance(failures, list):
        return None
    named: set[str] = set()
    for entry in failures:
        identifier = entry.get("itemIdentifier") if isinstance(entry, dict) else None
        if not isinstance(identifier, str) or identifier not in message_ids:
            return None
        named.add(identifier)
    return named
