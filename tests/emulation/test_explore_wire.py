"""explore's handler HTTP: boto3's calls to loadtest's backend on kept connections answer
exactly as through urllib3, and nothing else is touched."""

from __future__ import annotations

import socket
import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from botocore.httpsession import URLLib3Session

from loadtest.aws.kept_http import KeptConnection
from loadtest.emulation.explore import wire
from tests.backend import aws_clients


def _calls(url: str, tag: str) -> list[Any]:
    """A DynamoDB conditional put refused with its old item, an S3 object put, headed and
    read back (a streamed body), an SNS publish, an SQS send and receive: what each answered,
    without the parts that differ per call (ids, dates)."""
    dynamodb, s3 = aws_clients.dynamodb(url), aws_clients.s3(url)
    sns, sqs = aws_clients.sns(url), aws_clients.sqs(url)
    answers: list[Any] = []
    with aws_clients.table(url) as table:
        item = {"id": {"S": "order-1"}, "quantity": {"N": "4"}}
        dynamodb.put_item(TableName=table, Item=item)
        with pytest.raises(ClientError) as refused:
            dynamodb.put_item(
                TableName=table,
                Item={**item, "quantity": {"N": "5"}},
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        response: dict[str, Any] = dict(refused.value.response)
        answers.append((response["Error"]["Code"], response["Item"]))
        answers.append(dynamodb.get_item(TableName=table, Key={"id": {"S": "order-1"}})["Item"])
    bucket = f"wire-{tag}-{uuid.uuid4().hex[:8]}"
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="receipts/order-1.json", Body=b'{"id": "order-1"}' * 100)
    head = s3.head_object(Bucket=bucket, Key="receipts/order-1.json")
    answers.append((head["ContentLength"], head["ETag"]))
    answers.append(s3.get_object(Bucket=bucket, Key="receipts/order-1.json")["Body"].read())
    s3.delete_object(Bucket=bucket, Key="receipts/order-1.json")
    s3.delete_bucket(Bucket=bucket)
    topic = sns.create_topic(Name=f"wire-{tag}")["TopicArn"]
    answers.append(sorted(sns.publish(TopicArn=topic, Message="hello")))
    sns.delete_topic(TopicArn=topic)
    queue = sqs.create_queue(QueueName=f"wire-{tag}-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    sqs.send_message(QueueUrl=queue, MessageBody="é and ü")
    answers.append([m["Body"] for m in sqs.receive_message(QueueUrl=queue)["Messages"]])
    sqs.delete_queue(QueueUrl=queue)
    return answers


def test_calls_answer_through_kept_connections_as_through_urllib3(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    exchanges: list[str] = []
    exchange = KeptConnection.exchange

    def counted(self: KeptConnection, method: str, target: str, *args: Any) -> Any:
        exchanges.append(f"{method} {target}")
        return exchange(self, method, target, *args)

    sent: list[str] = []
    send = URLLib3Session.send

    def through_urllib3_counted(self: URLLib3Session, request: Any) -> Any:
        sent.append(f"{request.method} {request.url}")
        return send(self, request)

    monkeypatch.setattr(KeptConnection, "exchange", counted)
    monkeypatch.setattr(URLLib3Session, "send", through_urllib3_counted)
    monkeypatch.setattr(wire, "_original_send", through_urllib3_counted)
    through_urllib3 = _calls(backend_url, "urllib3")
    assert exchanges == []
    requests = len(sent)
    with wire.installed(backend_url):
        kept = _calls(backend_url, "kept")
    assert kept == through_urllib3
    # Every request of the block went out on a kept connection, none through urllib3.
    assert (len(exchanges), len(sent)) == (requests, requests)
    assert URLLib3Session.send is through_urllib3_counted


def test_other_endpoints_and_a_dead_backend(backend_url: str) -> None:
    free = socket.socket()
    free.bind(("127.0.0.1", 0))
    dead_url = f"http://127.0.0.1:{free.getsockname()[1]}"
    free.close()
    dead = aws_clients.dynamodb(dead_url)
    # Through urllib3 and through a kept connection alike: botocore's own error.
    with pytest.raises(EndpointConnectionError):
        dead.list_tables()
    with wire.installed(dead_url), pytest.raises(EndpointConnectionError):
        dead.list_tables()
    # Installed for one endpoint, another keeps its own HTTP client.
    with wire.installed(dead_url):
        assert URLLib3Session.send is not wire._original_send
        assert "TableNames" in aws_clients.dynamodb(backend_url).list_tables()
    assert URLLib3Session.send is wire._original_send
