"""The patched backend answers SQS exactly as moto as shipped does, on the wire.

One conversation - SendMessage and SendMessageBatch with and without message attributes
and AWSTraceHeader, ReceiveMessage with every attribute and with a filtered subset, a
redelivery after a visibility timeout, ChangeMessageVisibility, deletes (again, with an
old handle) and FIFO sends - is held with a moto server as shipped
and with the embedded backend; every response body must be the same JSON once the values
that are random or a clock's reading are replaced by their kind.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from loadtest.backend.embedded import EmbeddedBackend

_AUTH = (
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20250101/us-east-1/sqs/aws4_request, "
    "SignedHeaders=host, Signature=x"
)
_VOLATILE = {
    "MessageId": "<id>",
    "ReceiptHandle": "<handle>",
    "SentTimestamp": "<ms>",
    "ApproximateFirstReceiveTimestamp": "<ms>",
    "SequenceNumber": "<sequence>",
    "CreatedTimestamp": "<s>",
    "LastModifiedTimestamp": "<s>",
}

Call = Callable[[str, dict[str, Any]], Any]


@pytest.fixture(scope="module")
def shipped_url() -> Iterator[str]:
    with EmbeddedBackend(patched=False) as backend:
        yield backend.endpoint_url


def _caller(url: str) -> Call:
    def call(action: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(
            url + "/",
            data=json.dumps(body).encode(),
            headers={
                "X-Amz-Target": f"AmazonSQS.{action}",
                "Content-Type": "application/x-amz-json-1.0",
                "Authorization": _AUTH,
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"{}")

    return call


def _normalised(value: Any, url: str) -> Any:
    if isinstance(value, dict):
        return {k: _VOLATILE.get(k) or _normalised(v, url) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v, url) for v in value]
    if isinstance(value, str):
        return re.sub(r"https?://[^/]+", "<endpoint>", value)
    return value


def _conversation(call: Call, queue: str) -> list[Any]:
    """Every answer of one SQS conversation, in order."""
    answers: list[Any] = []

    def say(action: str, body: dict[str, Any]) -> Any:
        status, answer = call(action, body)
        answers.append((action, status, answer))
        return answer

    url = say("CreateQueue", {"QueueName": queue})["QueueUrl"]
    attributes = {
        "trace": {"DataType": "String", "StringValue": "abc-123"},
        "attempt": {"DataType": "Number", "StringValue": "3"},
        "blob": {"DataType": "Binary", "BinaryValue": "AAH+"},
    }
    say("SendMessage", {"QueueUrl": url, "MessageBody": '{"id":"a","quantity":1}'})
    with_attributes: dict[str, Any] = {"MessageBody": "with", "MessageAttributes": attributes}
    say("SendMessage", {"QueueUrl": url, **with_attributes})
    say(
        "SendMessage",
        {
            "QueueUrl": url,
            "MessageBody": "traced",
            "MessageSystemAttributes": {
                "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-5-6"}
            },
        },
    )
    entries: list[dict[str, Any]] = [
        {"Id": str(i), "MessageBody": f"batch {i}"} for i in range(12, 21)
    ]
    entries.append({"Id": "last", "MessageBody": "attributed", "MessageAttributes": attributes})
    say("SendMessageBatch", {"QueueUrl": url, "Entries": entries})
    everything = {"AttributeNames": ["All"], "MessageAttributeNames": ["All"]}
    first = say("ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 3, **everything})
    some = {"AttributeNames": ["ApproximateReceiveCount"], "MessageAttributeNames": ["trace"]}
    second = say("ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10, **some})
    say("ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10})  # nothing visible
    say("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})
    handles = [m["ReceiptHandle"] for m in first["Messages"] + second["Messages"]]
    say(
        "ChangeMessageVisibility",
        {"QueueUrl": url, "ReceiptHandle": handles[0], "VisibilityTimeout": 0},
    )
    say("ChangeMessageVisibilityBatch", {
        "QueueUrl": url,
        "Entries": [{"Id": "v", "ReceiptHandle": handles[1], "VisibilityTimeout": 0}],
    })  # fmt: skip
    again = say("ReceiveMessage", {"QueueUrl": url, "MaxNumberOfMessages": 10, **everything})
    say("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": handles[0]})  # an old handle
    say("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": handles[0]})  # and again
    say("DeleteMessage", {"QueueUrl": url, "ReceiptHandle": "never-issued"})
    say("DeleteMessageBatch", {
        "QueueUrl": url,
        "Entries": [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
            for i, m in enumerate(again["Messages"])
        ],
    })  # fmt: skip
    say("GetQueueAttributes", {"QueueUrl": url, "AttributeNames": ["All"]})

    fifo = say(
        "CreateQueue",
        {"QueueName": queue + ".fifo", "Attributes": {"FifoQueue": "true"}},
    )["QueueUrl"]
    # (A duplicate is answered as SQS does, unlike moto: test_backend_fifo covers it.)
    for body, dedup in (("f1", "d1"), ("f2", "d2")):
        say(
            "SendMessage",
            {
                "QueueUrl": fifo,
                "MessageBody": body,
                "MessageGroupId": "g",
                "MessageDeduplicationId": dedup,
            },
        )
    say("SendMessageBatch", {
        "QueueUrl": fifo,
        "Entries": [
            {"Id": "a", "MessageBody": "f3", "MessageGroupId": "h", "MessageDeduplicationId": "d3"},
            {"Id": "b", "MessageBody": "f4", "MessageGroupId": "h", "MessageDeduplicationId": "d4"},
        ],
    })  # fmt: skip
    fifo_first = say("ReceiveMessage", {"QueueUrl": fifo, "MaxNumberOfMessages": 10, **everything})
    say("DeleteMessageBatch", {
        "QueueUrl": fifo,
        "Entries": [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
            for i, m in enumerate(fifo_first["Messages"])
        ],
    })  # fmt: skip
    say("ReceiveMessage", {"QueueUrl": fifo, "MaxNumberOfMessages": 10, **everything})
    say("GetQueueAttributes", {"QueueUrl": fifo, "AttributeNames": ["All"]})
    for deleted in (url, fifo):
        say("DeleteQueue", {"QueueUrl": deleted})
    return answers


def _timestamps_ordered(answers: list[Any]) -> None:
    for _, _, answer in answers:
        for message in answer.get("Messages", []) if isinstance(answer, dict) else []:
            attributes = message.get("Attributes", {})
            if "ApproximateFirstReceiveTimestamp" in attributes:
                sent = int(attributes["SentTimestamp"])
                assert (
                    sent
                    <= int(attributes["ApproximateFirstReceiveTimestamp"])
                    <= time.time() * 1000
                )


def test_sqs_answers_as_moto_as_shipped(shipped_url: str, backend_url: str) -> None:
    expected = _conversation(_caller(shipped_url), "wire-shipped")
    got = _conversation(_caller(backend_url), "wire-patched")
    _timestamps_ordered(got)
    assert len(got) == len(expected)
    for (action, *answer), (_, *wanted) in zip(got, expected, strict=True):
        normal_got = _normalised(answer, backend_url)
        normal_wanted = _normalised(wanted, shipped_url)
        normal_got = json.loads(json.dumps(normal_got).replace("wire-patched", "Q"))
        normal_wanted = json.loads(json.dumps(normal_wanted).replace("wire-shipped", "Q"))
        assert normal_got == normal_wanted, action
