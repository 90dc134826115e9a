"""loadtest's own SQS calls written by hand: the same answers as the client's, the client's
own errors, and the client's call when the backend does not answer."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import boto3
import pytest
from botocore.exceptions import ClientError

from loadtest.aws import clients as aws
from loadtest.aws.hand_sqs import HandSQS, HandSQSSync
from loadtest.aws.kept_http import Answer, AsyncKeptConnection, KeptConnection
from tests.backend import aws_clients

ENTRIES: list[Any] = [
    {
        "Id": "0",
        "MessageBody": '{"id": "order-1", "quantity": 4}',
        "MessageAttributes": {
            "trace": {"DataType": "String", "StringValue": "t-1"},
            "raw": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
            "n": {"DataType": "Number", "StringValue": "7"},
        },
    },
    {"Id": "1", "MessageBody": "é and ü"},
]


def _comparable(answer: dict[str, Any]) -> Any:
    """An answer without what differs per call (ids, handles, times, the request's metadata)."""
    plain = {k: v for k, v in answer.items() if k != "ResponseMetadata"}
    for message in plain.get("Messages", []):
        message.pop("ReceiptHandle")
        message.pop("MessageId")
        for name in ("SentTimestamp", "ApproximateFirstReceiveTimestamp"):
            message["Attributes"].pop(name, None)
    for entry in plain.get("Successful", []):
        entry.pop("MessageId", None)
        entry.pop("SequenceNumber", None)
    return plain


@pytest.fixture
def queues(backend_url: str) -> Iterator[tuple[str, str]]:
    sqs = aws_clients.sqs(backend_url)
    made = [
        sqs.create_queue(QueueName=f"hand-{uuid.uuid4().hex[:8]}")["QueueUrl"] for _ in range(2)
    ]
    yield made[0], made[1]
    for url in made:
        sqs.delete_queue(QueueUrl=url)


def _round(client: Any, url: str) -> list[Any]:
    """Send a batch, receive it with every attribute, delete it with one bad handle."""
    sent = client.send_message_batch(QueueUrl=url, Entries=ENTRIES)
    got = client.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        AttributeNames=["All"],
        MessageAttributeNames=["All"],
    )
    handles = [m["ReceiptHandle"] for m in got["Messages"]]
    deleted = client.delete_message_batch(
        QueueUrl=url,
        Entries=[{"Id": str(i), "ReceiptHandle": h} for i, h in enumerate([*handles, "bad"])],
    )
    return [_comparable(sent), _comparable(got), _comparable(deleted)]


def test_the_sync_calls_answer_as_the_client(backend_url: str, queues: tuple[str, str]) -> None:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    client: Any = aws.sink_clients(target).sqs
    assert isinstance(client, HandSQSSync)
    by_client, by_hand = queues
    sent: list[str] = []
    exchange = KeptConnection.exchange

    def counted(self: KeptConnection, method: str, target: str, *args: Any) -> Any:
        sent.append(method)
        return exchange(self, method, target, *args)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(KeptConnection, "exchange", counted)
        hand = _round(client, by_hand)
    plain = aws_clients.sqs(backend_url)
    assert hand == _round(plain, by_client)
    assert len(sent) == 2  # the receive and the delete went by hand (the send is the client's)
    assert hand[1]["Messages"][0]["MessageAttributes"]["raw"]["BinaryValue"] == b"\x00\xff"
    assert [f["Id"] for f in hand[2]["Failed"]] == ["2"]
    client.close()


def test_the_async_calls_answer_as_the_client_and_errors_are_the_client_s(
    backend_url: str, queues: tuple[str, str]
) -> None:
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    by_client, by_hand = queues

    async def main() -> tuple[list[Any], list[Any], str, str]:
        async with aws.clients(target) as (given, _):
            hand: Any = given
            assert isinstance(hand, HandSQS)
            real = hand._client
            results = []
            for client, url in ((hand, by_hand), (real, by_client)):
                sent = await client.send_message_batch(QueueUrl=url, Entries=ENTRIES)
                got = await client.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=10,
                    AttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
                handles = [m["ReceiptHandle"] for m in got["Messages"]]
                deleted = await client.delete_message_batch(
                    QueueUrl=url,
                    Entries=[{"Id": str(i), "ReceiptHandle": h} for i, h in enumerate(handles)],
                )
                results.append([_comparable(sent), _comparable(got), _comparable(deleted)])
            errors = []
            for client in (hand, real):
                try:
                    await client.receive_message(QueueUrl=by_hand + "-gone")
                except ClientError as exc:
                    errors.append(f"{type(exc).__name__} {exc.response['Error']['Code']}")
            return results[0], results[1], errors[0], errors[1]

    hand, plain, hand_error, plain_error = anyio.run(main, backend="asyncio")
    assert hand == plain
    assert hand[1]["Messages"][0]["MessageAttributes"]["raw"]["BinaryValue"] == b"\x00\xff"
    assert (
        hand_error == plain_error == ("QueueDoesNotExist AWS.SimpleQueueService.NonExistentQueue")
    )


def test_a_call_not_answered_is_the_client_s(
    backend_url: str, queues: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A kept connection that breaks mid-exchange hands the call to the client, which makes
    it and answers (here: the same backend)."""
    target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
    url, _ = queues

    async def broken(self: AsyncKeptConnection, *args: Any) -> Any:
        raise ConnectionResetError("cut")

    monkeypatch.setattr(AsyncKeptConnection, "exchange", broken)

    async def main() -> dict[str, Any]:
        async with aws.clients(target) as (hand, _):
            await hand.send_message_batch(QueueUrl=url, Entries=ENTRIES)
            answer = await hand.receive_message(QueueUrl=url, MaxNumberOfMessages=10)
            return dict(answer)

    answer = anyio.run(main, backend="asyncio")
    assert sorted(m["Body"] for m in answer["Messages"]) == sorted(
        e["MessageBody"] for e in ENTRIES
    )


_ANSWERS: dict[str, dict[str, Any]] = {
    "ReceiveMessage": {
        "Messages": [
            {
                "Body": "é and ü",
                "MessageId": "m-1",
                "ReceiptHandle": "h-1",
                "MD5OfBody": "0" * 32,
                "Attributes": {"ApproximateReceiveCount": "2", "SentTimestamp": "1"},
                "MessageAttributes": {
                    "raw": {"DataType": "Binary", "BinaryValue": "AP8="},
                    "trace": {"StringValue": "t-1", "DataType": "String"},
                },
                "MD5OfMessageAttributes": "1" * 32,
                "Unmodelled": "left out",
            },
            {"MessageId": "m-2", "ReceiptHandle": "h-2", "Body": "{}", "Attributes": {}},
        ]
    },
    "DeleteMessageBatch": {
        "Failed": [{"Id": "1", "SenderFault": True, "Code": "ReceiptHandleIsInvalid"}],
        "Successful": [{"Id": "0"}],
    },
    "SendMessageBatch": {
        "Successful": [{"Id": "0", "MessageId": "m-3", "MD5OfMessageBody": "2" * 32}],
        "Failed": [],
    },
}


def _outcome(hand: HandSQSSync, operation: str, answer: Any) -> str:
    """What a call's answer reads as: its repr (values and key order), or the error raised."""
    try:
        return repr(hand._parsed(operation, answer))
    except Exception as exc:  # what botocore's parser raises, whichever
        return f"raised {type(exc).__name__}"


@pytest.mark.parametrize("operation", sorted(_ANSWERS))
def test_an_answer_reads_as_botocore_s_parser_reads_it(operation: str) -> None:
    client = boto3.client(
        "sqs",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="a",
        aws_secret_access_key="b",
    )
    hand = HandSQSSync(client, "http://127.0.0.1:9", "a")
    by_parser = HandSQSSync(client, "http://127.0.0.1:9", "a")
    assert hand._readers[operation] is not None
    by_parser._readers[operation] = None  # botocore's parser itself
    headers = {
        "x-amzn-RequestId": "r-1",
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amzn-Requestid": "r-2",  # the same name again, another case: the last value counts
    }
    for body in (json.dumps(_ANSWERS[operation]).encode(), b"", b"[1]", b"not json", b"\xff"):
        answer = Answer(200, dict(headers), body)
        assert _outcome(hand, operation, answer) == _outcome(by_parser, operation, answer)
    read = _outcome(
        hand, operation, Answer(200, dict(headers), json.dumps(_ANSWERS[operation]).encode())
    )
    assert "RetryAttempts" in read and "left out" not in read
    client.close()
