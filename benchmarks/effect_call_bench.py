"""What one effect call costs next to a table write: ``python -m benchmarks.effect_call_bench``.

On one embedded backend, one synchronous boto3 client at a time (nothing else running),
``--calls`` of each, and prints the CPU milliseconds per call of the backend (its process,
read from /proc) and of the client (this process):

* a conditional ``PutItem`` (``attribute_not_exists(id)``), the guarded write;
* an SNS ``Publish`` to a topic with an SQS subscription without raw delivery, as a run's
  capture queue is subscribed (the backend wraps it in SNS's signed envelope and delivers
  it to the queue within the call), a consumer's effect;
* reading the queue back as a run reads a topic's capture queue (``ReceiveMessage`` of 10
  with every attribute, ``DeleteMessageBatch``), per message read.

The first two are the consumer's own calls, which loadtest leaves as costly as on Lambda;
the third is loadtest's. Prints; asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable
from typing import Any

import boto3

from loadtest.backend.embedded import EmbeddedBackend


def _cpu_s(pid: int) -> float:
    """User+system CPU seconds of a live process, all its threads (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(label: str, pid: int, calls: int, run: Callable[[], int]) -> None:
    backend, client = _cpu_s(pid), time.process_time()
    count = run() or calls
    backend_ms = 1000 * (_cpu_s(pid) - backend) / count
    client_ms = 1000 * (time.process_time() - client) / count
    print(f"{label:<38} backend {backend_ms:6.3f} ms   client {client_ms:6.3f} ms   (n={count})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    with EmbeddedBackend() as backend:
        pid = backend.pid
        assert pid is not None
        where: dict[str, Any] = {
            "endpoint_url": backend.endpoint_url,
            "region_name": "us-east-1",
            "aws_access_key_id": "testing",
            "aws_secret_access_key": "testing",
        }
        sns, sqs = boto3.client("sns", **where), boto3.client("sqs", **where)
        dynamodb = boto3.client("dynamodb", **where)
        topic = sns.create_topic(Name="bench-orders")["TopicArn"]
        queue = sqs.create_queue(QueueName="bench-capture")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])
        sns.subscribe(
            TopicArn=topic,
            Protocol="sqs",
            Endpoint=arn["Attributes"]["QueueArn"],
        )  # without raw delivery, as a run subscribes a topic's capture queue
        dynamodb.create_table(
            TableName="bench-orders",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            BillingMode="PAY_PER_REQUEST",
        )
        calls = int(args.calls)

        def puts() -> int:
            for i in range(calls):
                dynamodb.put_item(
                    TableName="bench-orders",
                    Item={"id": {"S": f"order-{i}"}, "quantity": {"N": "4"}},
                    ConditionExpression="attribute_not_exists(id)",
                )
            return calls

        def publishes() -> int:
            for i in range(calls):
                sns.publish(TopicArn=topic, Message=json.dumps({"id": f"order-{i}"}))
            return calls

        def drain() -> int:
            read = 0
            while got := sqs.receive_message(
                QueueUrl=queue,
                MaxNumberOfMessages=10,
                VisibilityTimeout=60,
                MessageSystemAttributeNames=["All"],
            ).get("Messages", []):
                read += len(got)
                entries: list[Any] = [
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)
                ]
                sqs.delete_message_batch(QueueUrl=queue, Entries=entries)
            return read

        _measure("PutItem, conditional", pid, calls, puts)
        _measure("SNS Publish (delivered to a queue)", pid, calls, publishes)
        _measure("capture queue read back, per message", pid, calls, drain)


if __name__ == "__main__":
    main()
