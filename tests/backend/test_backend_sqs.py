"""SQS on the embedded backend: one consumer per message at a time, and SQS semantics kept.

Real clients against the real server (``backend_url``), as the runner uses it: batches of
10, long polls, all attributes, batch deletes, redrive to a dead-letter queue.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest
from botocore.exceptions import ClientError

from tests.backend import aws_clients

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import (
        DeleteMessageBatchRequestEntryTypeDef,
        MessageAttributeValueTypeDef,
        MessageTypeDef,
    )

POLLERS = 8
MESSAGES = 500


def _send(sqs: SQSClient, queue_url: str, bodies: list[str]) -> list[str]:
    """SendMessageBatch in tens; the message ids, in order."""
    ids: list[str] = []
    for first in range(0, len(bodies), 10):
        chunk = bodies[first : first + 10]
        response = sqs.send_message_batch(
            QueueUrl=queue_url,
            Entries=[{"Id": str(i), "MessageBody": body} for i, body in enumerate(chunk)],
        )
        assert not response.get("Failed")
        ids.extend(entry["MessageId"] for entry in response["Successful"])
    return ids


def _receive(
    sqs: SQSClient, queue_url: str, *, wait_s: int = 0, visibility_timeout_s: int | None = None
) -> list[MessageTypeDef]:
    if visibility_timeout_s is None:
        response = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=wait_s,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
    else:
        response = sqs.receive_message(
            QueueUrl=queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=wait_s,
            VisibilityTimeout=visibility_timeout_s,
            AttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
    return response.get("Messages", [])


def _counts(sqs: SQSClient, queue_url: str) -> tuple[int, int]:
    attributes = sqs.get_queue_attributes(
        QueueUrl=queue_url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return (
        int(attributes["ApproximateNumberOfMessages"]),
        int(attributes["ApproximateNumberOfMessagesNotVisible"]),
    )


def test_concurrent_pollers_never_share_a_message(backend_url: str) -> None:
    with aws_clients.queue(backend_url, {"VisibilityTimeout": "300"}) as queue_url:
        sent = _send(aws_clients.sqs(backend_url), queue_url, [f"m{i}" for i in range(MESSAGES)])
        received: list[str] = []
        lock = threading.Lock()
        deadline = time.monotonic() + 60

        def poll(_: int) -> None:
            sqs = aws_clients.sqs(backend_url)
            while time.monotonic() < deadline:
                with lock:
                    if len(received) >= MESSAGES:
                        return
                batch = _receive(sqs, queue_url, wait_s=1)
                with lock:
                    received.extend(message["MessageId"] for message in batch)

        with ThreadPoolExecutor(max_workers=POLLERS) as pool:
            list(pool.map(poll, range(POLLERS)))

        duplicates = {i for i in received if received.count(i) > 1}
        assert not duplicates
        assert sorted(received) == sorted(sent)
        assert _counts(aws_clients.sqs(backend_url), queue_url) == (0, MESSAGES)


def test_counts_follow_receives_and_deletes(backend_url: str) -> None:
    sqs = aws_clients.sqs(backend_url)
    with aws_clients.queue(backend_url) as queue_url:
        _send(sqs, queue_url, [f"m{i}" for i in range(25)])
        assert _counts(sqs, queue_url) == (25, 0)
        batch = _receive(sqs, queue_url, visibility_timeout_s=60)
        assert len(batch) == 10
        assert _counts(sqs, queue_url) == (15, 10)
        entries: list[DeleteMessageBatchRequestEntryTypeDef] = [
            {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
        ]
        deleted = sqs.delete_message_batch(QueueUrl=queue_url, Entries=entries)
        assert len(deleted["Successful"]) == 10
        assert _counts(sqs, queue_url) == (15, 0)
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=batch[0]["ReceiptHandle"])  # again
        with pytest.raises(ClientError) as invalid:
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle="not-a-receipt-handle")
        assert "ReceiptHandleIsInvalid" in invalid.value.response["Error"]["Code"]


def test_message_returns_after_visibility_timeout_with_receive_count_2(backend_url: str) -> None:
    sqs = aws_clients.sqs(backend_url)
    with aws_clients.queue(backend_url) as queue_url:
        _send(sqs, queue_url, ["retry me"])
        (first,) = _receive(sqs, queue_url, visibility_timeout_s=1)
        assert first["Attributes"]["ApproximateReceiveCount"] == "1"
        again: list[MessageTypeDef] = []
        for _ in range(5):  # long polls; the message reappears about 1 s after the first
            again = _receive(sqs, queue_url, wait_s=2, visibility_timeout_s=30)
            if again:
                break
        (second,) = again
        assert second["MessageId"] == first["MessageId"]
        assert second["Attributes"]["ApproximateReceiveCount"] == "2"
        assert second["ReceiptHandle"] != first["ReceiptHandle"]
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=second["ReceiptHandle"])
        assert _counts(sqs, queue_url) == (0, 0)


def test_redrive_to_dead_letter_queue_after_max_receive_count(backend_url: str) -> None:
    sqs = aws_clients.sqs(backend_url)
    with aws_clients.queue(backend_url) as dlq_url:
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        policy = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "2"})
        with aws_clients.queue(backend_url, {"RedrivePolicy": policy}) as queue_url:
            (message_id,) = _send(sqs, queue_url, ["poison"])
            for receive_count in ("1", "2"):
                # VisibilityTimeout=0: a failed delivery that is visible again at once.
                (delivery,) = _receive(sqs, queue_url, visibility_timeout_s=0)
                assert delivery["Attributes"]["ApproximateReceiveCount"] == receive_count
            assert _receive(sqs, queue_url, visibility_timeout_s=0) == []
            assert _counts(sqs, queue_url) == (0, 0)
            assert _counts(sqs, dlq_url) == (1, 0)
            (dead,) = _receive(sqs, dlq_url)
            assert (dead["MessageId"], dead["Body"]) == (message_id, "poison")


def test_long_poll_returns_a_message_sent_during_the_wait(backend_url: str) -> None:
    with aws_clients.queue(backend_url) as queue_url, ThreadPoolExecutor(max_workers=1) as pool:
        waiting = pool.submit(_receive, aws_clients.sqs(backend_url), queue_url, wait_s=10)
        time.sleep(0.5)  # let the poll start waiting (not a timing assertion)
        assert not waiting.done()
        _send(aws_clients.sqs(backend_url), queue_url, ["late"])
        assert [m["Body"] for m in waiting.result()] == ["late"]


def test_message_attributes_and_md5_survive_the_round_trip(backend_url: str) -> None:
    sqs = aws_clients.sqs(backend_url)
    attributes: dict[str, MessageAttributeValueTypeDef] = {
        "trace": {"DataType": "String", "StringValue": "abc-123"},
        "attempt": {"DataType": "Number", "StringValue": "3"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xfe"},
    }
    body = json.dumps({"id": "dedup-order", "quantity": 4})
    with aws_clients.queue(backend_url) as queue_url:
        sent = sqs.send_message(QueueUrl=queue_url, MessageBody=body, MessageAttributes=attributes)
        (message,) = _receive(sqs, queue_url, wait_s=1)
        assert message["Body"] == body
        assert (
            message["MD5OfBody"]
            == hashlib.md5(body.encode()).hexdigest()
            == sent["MD5OfMessageBody"]
        )
        assert message["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
        assert message["MessageAttributes"] == attributes
        assert set(message["Attributes"]) >= {
            "ApproximateReceiveCount",
            "SentTimestamp",
            "ApproximateFirstReceiveTimestamp",
            "SenderId",
        }
