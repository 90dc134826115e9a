"""Benchmark of the embedded backend: ``python -m benchmarks.backend_bench``.

Prints figures, never asserts. For each backend (patched, and moto as shipped unless
``--skip-unpatched``) it measures:

* an SQS burst: send N messages (``SendMessageBatch`` of 10), then receive
  (``MaxNumberOfMessages=10``, ``WaitTimeSeconds=1``, all attributes) and delete
  (``DeleteMessageBatch``) until the queue is empty, one client, and reports the cost per
  message (in microseconds) of each phase. Per-message cost should not grow with N.
* conditional puts: ``--keys`` keys x ``--writers`` concurrent writers, each a
  ``PutItem`` with ``attribute_not_exists(id)``; reports puts/s and how many keys more than
  one writer won (must be 0 for a usable backend).

moto as shipped gets smaller bursts by default (``--unpatched-sizes``): its cost grows with
depth so fast that a 20,000-message burst would take hours (3,000 takes ~5 minutes).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from loadtest.backend.embedded import EmbeddedBackend

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_sqs import SQSClient


@dataclass(frozen=True)
class BurstFigures:
    """Cost of one SQS burst, per message."""

    messages: int
    """Messages sent, received and deleted."""
    send_us_per_message: float
    """Wall time of the send phase divided by ``messages`` (in microseconds)."""
    drain_us_per_message: float
    """Wall time of the receive+delete phase divided by ``messages`` (in microseconds)."""

    @property
    def total_us_per_message(self) -> float:
        """Send plus drain, per message (in microseconds)."""
        return self.send_us_per_message + self.drain_us_per_message


@dataclass(frozen=True)
class PutFigures:
    """Concurrent conditional puts."""

    puts: int
    """PutItem calls made."""
    puts_per_s: float
    """Calls per second over the whole run."""
    accepted: int
    """Puts whose condition held."""
    keys_won_twice: int
    """Keys that more than one writer won (a broken condition check)."""


def _client_config() -> Config:
    return Config(retries={"max_attempts": 1, "mode": "standard"}, max_pool_connections=64)


def _session_kwargs(endpoint_url: str) -> dict[str, Any]:
    return {
        "endpoint_url": endpoint_url,
        "region_name": "us-east-1",
        "aws_access_key_id": "bench",
        "aws_secret_access_key": "bench",
        "config": _client_config(),
    }


def _sqs(endpoint_url: str) -> SQSClient:
    return boto3.session.Session().client("sqs", **_session_kwargs(endpoint_url))


def _dynamodb(endpoint_url: str) -> DynamoDBClient:
    return boto3.session.Session().client("dynamodb", **_session_kwargs(endpoint_url))


def sqs_burst(endpoint_url: str, messages: int) -> BurstFigures:
    """Send ``messages``, then receive and delete them all; one client, one queue."""
    sqs = _sqs(endpoint_url)
    queue_url = sqs.create_queue(QueueName=f"bench-{uuid.uuid4().hex[:12]}")["QueueUrl"]
    try:
        start_ns = time.perf_counter_ns()
        for first in range(0, messages, 10):
            entries = [
                {
                    "Id": str(index),
                    "MessageBody": f'{{"id": "order-{index}", "quantity": 1}}',
                    "MessageAttributes": {"source": {"DataType": "String", "StringValue": "bench"}},
                }
                for index in range(first, min(first + 10, messages))
            ]
            sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)  # type: ignore[arg-type]
        sent_ns = time.perf_counter_ns()
        received = 0
        while received < messages:
            batch = sqs.receive_message(
                QueueUrl=queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=1,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not batch:
                continue
            received += len(batch)
            sqs.delete_message_batch(
                QueueUrl=queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
                ],
            )
        drained_ns = time.perf_counter_ns()
    finally:
        sqs.delete_queue(QueueUrl=queue_url)
    return BurstFigures(
        messages=messages,
        send_us_per_message=(sent_ns - start_ns) / 1000 / messages,
        drain_us_per_message=(drained_ns - sent_ns) / 1000 / messages,
    )


def conditional_puts(endpoint_url: str, keys: int, writers: int) -> PutFigures:
    """``writers`` threads each try to create every one of ``keys`` items."""
    table = f"bench-{uuid.uuid4().hex[:12]}"
    admin = _dynamodb(endpoint_url)
    admin.create_table(
        TableName=table,
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    wins: dict[str, int] = {}
    wins_lock = threading.Lock()
    barrier = threading.Barrier(writers)

    def write(writer: int) -> int:
        client = _dynamodb(endpoint_url)
        accepted = 0
        barrier.wait()
        for key in range(keys):
            try:
                client.put_item(
                    TableName=table,
                    Item={"id": {"S": f"k{key}"}, "writer": {"N": str(writer)}},
                    ConditionExpression="attribute_not_exists(id)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as exc:
                if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                continue
            accepted += 1
            with wins_lock:
                wins[f"k{key}"] = wins.get(f"k{key}", 0) + 1
        return accepted

    try:
        start_ns = time.perf_counter_ns()
        with ThreadPoolExecutor(max_workers=writers) as pool:
            accepted = sum(pool.map(write, range(writers)))
        elapsed_s = (time.perf_counter_ns() - start_ns) / 1e9
    finally:
        admin.delete_table(TableName=table)
    return PutFigures(
        puts=keys * writers,
        puts_per_s=keys * writers / elapsed_s,
        accepted=accepted,
        keys_won_twice=sum(1 for count in wins.values() if count > 1),
    )


def _say(line: str = "") -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def _run(label: str, *, patched: bool, sizes: Sequence[int], keys: int, writers: int) -> None:
    with EmbeddedBackend(patched=patched) as backend:
        _say(f"{label} ({backend.endpoint_url})")
        sqs_burst(backend.endpoint_url, 100)  # warm-up: imports, first-request app set-up
        figures = [sqs_burst(backend.endpoint_url, size) for size in sizes]
        for burst in figures:
            _say(
                f"  burst {burst.messages:>6,} msgs: send {burst.send_us_per_message:6.0f} us/msg"
                f"  receive+delete {burst.drain_us_per_message:7.0f} us/msg"
                f"  total {burst.total_us_per_message:7.0f} us/msg"
            )
        if len(figures) > 1:
            ratio = figures[-1].total_us_per_message / figures[0].total_us_per_message
            _say(
                f"  per-message cost, {figures[-1].messages:,} vs {figures[0].messages:,}: "
                f"x{ratio:.2f}"
            )
        puts = conditional_puts(backend.endpoint_url, keys, writers)
        _say(
            f"  conditional puts {keys} keys x {writers} writers: {puts.puts_per_s:6.0f} puts/s,"
            f" accepted {puts.accepted}/{keys}, keys won twice {puts.keys_won_twice}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.backend_bench", description=__doc__)
    parser.add_argument("--sizes", type=_sizes, default=[1000, 20000], help="burst sizes")
    parser.add_argument(
        "--unpatched-sizes", type=_sizes, default=[300, 1000], help="burst sizes, moto as shipped"
    )
    parser.add_argument("--keys", type=int, default=1000, help="keys for conditional puts")
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers per key")
    parser.add_argument("--skip-unpatched", action="store_true", help="bench the patched one only")
    args = parser.parse_args(argv)
    _run(
        "embedded backend (patched)",
        patched=True,
        sizes=args.sizes,
        keys=args.keys,
        writers=args.writers,
    )
    if not args.skip_unpatched:
        _run(
            "moto 5.2 as shipped (unpatched)",
            patched=False,
            sizes=args.unpatched_sizes,
            keys=args.keys,
            writers=args.writers,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
