"""The embedded backend's CPU per request, by call: ``python benchmarks/backend_call_bench.py``.

One embedded backend, one client at a time, nothing else running: ``--calls`` of each of
the requests a run makes per message, and prints the CPU microseconds the backend's
process spent per request (read from /proc around each batch of calls):

* ``PutItem`` with ``attribute_not_exists(id)`` and ``ReturnValuesOnConditionCheckFailure
  =ALL_OLD`` (the guarded write), stored and refused (``ConditionalCheckFailedException``);
* ``GetItem`` (``ConsistentRead``), ``UpdateItem`` (``SET`` under a condition) and
  ``DeleteItem``;
* SQS ``SendMessageBatch``, ``ReceiveMessage`` and ``DeleteMessageBatch`` of 10, written
  by hand as the harness writes them (``loadtest.aws.hand_sqs``; send through boto3, whose
  request the backend reads the same way);
* SNS ``Publish`` to a topic with an SQS subscription (delivered within the call).

Run by path, it measures whichever tree is first on ``PYTHONPATH`` (the backend child
inherits it), so two trees can be measured in turn. ``--rounds`` repeats the whole set and
prints the median per call. Prints; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
from collections.abc import Callable
from typing import Any

import boto3

from loadtest.aws.hand_sqs import HandSQSSync
from loadtest.backend.embedded import EmbeddedBackend


def _cpu_s(pid: int) -> float:
    """User+system CPU seconds of a live process, all its threads (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _per_call_us(pid: int, calls: int, run: Callable[[int], None]) -> float:
    before = _cpu_s(pid)
    for i in range(calls):
        run(i)
    return 1e6 * (_cpu_s(pid) - before) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--endpoint-url",
        help="a backend already serving (``--pid`` its process) instead of a new one",
    )
    parser.add_argument("--pid", type=int)
    parser.add_argument(
        "--callgrind",
        action="store_true",
        help="the backend runs under valgrind --tool=callgrind: dump its counts per call kind",
    )
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        if args.endpoint_url:
            endpoint_url, pid = str(args.endpoint_url), int(args.pid)
        else:
            backend = stack.enter_context(EmbeddedBackend())
            assert backend.pid is not None and backend.endpoint_url is not None
            endpoint_url, pid = backend.endpoint_url, backend.pid
        _run(endpoint_url, pid, int(args.calls), int(args.rounds), callgrind=args.callgrind)


def _run(endpoint_url: str, pid: int, calls: int, rounds: int, *, callgrind: bool) -> None:
    where: dict[str, Any] = {
        "endpoint_url": endpoint_url,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    sns, dynamodb = boto3.client("sns", **where), boto3.client("dynamodb", **where)
    sqs_client = boto3.client("sqs", **where)
    sqs = HandSQSSync(sqs_client, endpoint_url, "testing")
    topic = sns.create_topic(Name="bench-orders")["TopicArn"]
    queue = sqs.create_queue(QueueName="bench-jobs")["QueueUrl"]
    dynamodb.create_table(
        TableName="bench-orders",
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        BillingMode="PAY_PER_REQUEST",
    )
    figures: dict[str, list[float]] = {}
    for round_ in range(rounds):
        prefix = f"r{round_}-"
        # Each round publishes to a fresh capture queue, the last one's unsubscribed and
        # deleted: SQS refuses a second PurgeQueue of a queue within 60 seconds.
        capture = sqs.create_queue(QueueName=f"bench-capture-{round_}")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=capture, AttributeNames=["QueueArn"])
        subscription = sns.subscribe(
            TopicArn=topic, Protocol="sqs", Endpoint=arn["Attributes"]["QueueArn"]
        )["SubscriptionArn"]
        received: list[list[dict[str, Any]]] = []

        def item(i: int, prefix: str = prefix) -> dict[str, Any]:
            return {
                "id": {"S": f"{prefix}order-{i}"},
                "quantity": {"N": "4"},
                "total_cents": {"N": "1100"},
                "status": {"S": "pending"},
            }

        def put(i: int) -> None:
            with contextlib.suppress(dynamodb.exceptions.ConditionalCheckFailedException):
                dynamodb.put_item(
                    TableName="bench-orders",
                    Item=item(i),
                    ConditionExpression="attribute_not_exists(id)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )

        def get(i: int) -> None:
            dynamodb.get_item(
                TableName="bench-orders", Key={"id": item(i)["id"]}, ConsistentRead=True
            )

        def update(i: int) -> None:
            dynamodb.update_item(
                TableName="bench-orders",
                Key={"id": item(i)["id"]},
                UpdateExpression="SET #status = :sent",
                ConditionExpression="#status = :pending",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":sent": {"S": "sent"}, ":pending": {"S": "pending"}},
            )

        def delete(i: int) -> None:
            dynamodb.delete_item(TableName="bench-orders", Key={"id": item(i)["id"]})

        def send(i: int) -> None:
            sqs_client.send_message_batch(
                QueueUrl=queue,
                Entries=[
                    {"Id": str(j), "MessageBody": json.dumps({"id": f"o-{i}-{j}", "quantity": 4})}
                    for j in range(10)
                ],
            )

        def receive(i: int, received: list[list[dict[str, Any]]] = received) -> None:
            got = sqs.receive_message(
                QueueUrl=queue,
                MaxNumberOfMessages=10,
                VisibilityTimeout=60,
                MessageSystemAttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            received.append(got.get("Messages", []))

        def delete_batch(i: int, received: list[list[dict[str, Any]]] = received) -> None:
            batch = received[i]
            sqs.delete_message_batch(
                QueueUrl=queue,
                Entries=[
                    {"Id": m["MessageId"], "ReceiptHandle": m["ReceiptHandle"]} for m in batch
                ],
            )

        def publish(i: int, prefix: str = prefix) -> None:
            sns.publish(TopicArn=topic, Message=json.dumps({"id": f"{prefix}order-{i}"}))

        for label, run in (
            ("PutItem, conditional, stored", put),
            ("PutItem, conditional, refused", put),
            ("GetItem", get),
            ("UpdateItem, conditional", update),
            ("DeleteItem", delete),
            ("SendMessageBatch of 10", send),
            ("ReceiveMessage of 10", receive),
            ("DeleteMessageBatch of 10", delete_batch),
            ("SNS Publish (to a queue)", publish),
        ):
            if callgrind:
                subprocess.run(["callgrind_control", "--zero", str(pid)], check=True)
            figures.setdefault(label, []).append(_per_call_us(pid, calls, run))
            if callgrind:
                name = re.sub(r"\W+", "_", label)
                subprocess.run(
                    ["callgrind_control", f"--dump={round_}-{name}", str(pid)], check=True
                )
        sns.unsubscribe(SubscriptionArn=subscription)
        sqs_client.delete_queue(QueueUrl=capture)
    for label, values in figures.items():
        print(f"{label:<34} {statistics.median(values):8.1f} us/call")


if __name__ == "__main__":
    main()
