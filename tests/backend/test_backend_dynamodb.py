"""DynamoDB on the embedded backend is atomic per request under concurrent clients.

moto alone lets two conditional writers win the same key, lets a failed
TransactWriteItems erase concurrent writes, and reads ReturnValues apart from the write;
``SerialisedDynamoDB`` closes all three. Each test runs many real clients in threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
from botocore.exceptions import ClientError

from tests.backend import aws_clients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.type_defs import AttributeValueTypeDef

Item = dict[str, "AttributeValueTypeDef"]
T = TypeVar("T")

WRITERS = 8
KEYS = 200


def _in_parallel(count: int, work: Callable[[int, threading.Barrier], T]) -> list[T]:
    """Run ``work(index, barrier)`` in ``count`` threads that start together."""
    barrier = threading.Barrier(count)
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda index: work(index, barrier), range(count)))


@dataclass(frozen=True)
class Attempt:
    """One conditional put: who tried which key, and what came back."""

    key: str
    writer: int
    accepted: bool
    old_item: Item | None
    """``ALL_OLD`` returned with ``ConditionalCheckFailedException``."""


def _conditional_puts(url: str, table: str, keys: Sequence[str], writer: int) -> list[Attempt]:
    client = aws_clients.dynamodb(url)
    attempts = []
    for key in keys:
        try:
            client.put_item(
                TableName=table,
                Item={"id": {"S": key}, "writer": {"N": str(writer)}},
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as exc:
            assert exc.response["Error"]["Code"] == "ConditionalCheckFailedException"
            old = exc.response.get("Item")
            attempts.append(Attempt(key, writer, accepted=False, old_item=old))  # type: ignore[arg-type]
        else:
            attempts.append(Attempt(key, writer, accepted=True, old_item=None))
    return attempts


@pytest.mark.slow
def test_conditional_put_has_exactly_one_winner_per_key(backend_url: str) -> None:
    keys = [f"k{index}" for index in range(KEYS)]
    with aws_clients.table(backend_url) as table:

        def writer(index: int, barrier: threading.Barrier) -> list[Attempt]:
            barrier.wait()
            return _conditional_puts(backend_url, table, keys, index)

        attempts = [a for batch in _in_parallel(WRITERS, writer) for a in batch]
    winners = {a.key: a.writer for a in attempts if a.accepted}
    assert sorted(winners) == sorted(keys)  # every key won...
    assert sum(a.accepted for a in attempts) == KEYS  # ...exactly once
    for loser in (a for a in attempts if not a.accepted):
        winner_item = {"id": {"S": loser.key}, "writer": {"N": str(winners[loser.key])}}
        assert loser.old_item == winner_item


def test_return_values_all_old_form_one_history(backend_url: str) -> None:
    """Unconditional overwrites of one key: each write sees exactly its predecessor."""
    puts_per_writer = 25
    with aws_clients.table(backend_url) as table:

        def writer(index: int, barrier: threading.Barrier) -> list[tuple[str, str | None]]:
            client = aws_clients.dynamodb(backend_url)
            barrier.wait()
            history = []
            for sequence in range(puts_per_writer):
                version = f"{index}.{sequence}"
                response = client.put_item(
                    TableName=table,
                    Item={"id": {"S": "hot"}, "version": {"S": version}},
                    ReturnValues="ALL_OLD",
                )
                old = response.get("Attributes", {}).get("version", {}).get("S")
                history.append((version, old))
            return history

        writes = [w for batch in _in_parallel(WRITERS, writer) for w in batch]
        olds = [old for _, old in writes]
        final = aws_clients.dynamodb(backend_url).get_item(
            TableName=table, Key={"id": {"S": "hot"}}
        )["Item"]["version"]["S"]

        assert olds.count(None) == 1  # one write found the key empty
        seen = [old for old in olds if old is not None]
        assert len(seen) == len(set(seen))  # no version replaced twice
        assert set(seen) | {final} == {version for version, _ in writes}


def test_failed_transaction_never_erases_concurrent_puts(backend_url: str) -> None:
    puts_per_writer = 60
    with aws_clients.table(backend_url) as table:
        stop = threading.Event()

        def put_writer(index: int) -> list[str]:
            client = aws_clients.dynamodb(backend_url)
            keys = [f"w{index}-{n}" for n in range(puts_per_writer)]
            for key in keys:
                client.put_item(TableName=table, Item={"id": {"S": key}})
            return keys

        def failing_transactions(index: int) -> int:
            client = aws_clients.dynamodb(backend_url)
            cancelled = 0
            while not stop.is_set():
                items: Any = [
                    {"Put": {"TableName": table, "Item": {"id": {"S": f"tx-{index}"}}}},
                    {
                        "ConditionCheck": {
                            "TableName": table,
                            "Key": {"id": {"S": "never-written"}},
                            "ConditionExpression": "attribute_exists(id)",
                        }
                    },
                ]
                with pytest.raises(ClientError) as failure:
                    client.transact_write_items(TransactItems=items)
                assert failure.value.response["Error"]["Code"] == "TransactionCanceledException"
                cancelled += 1
            return cancelled

        with ThreadPoolExecutor(max_workers=6) as pool:
            transactions = [pool.submit(failing_transactions, index) for index in range(2)]
            puts = [pool.submit(put_writer, index) for index in range(4)]
            written = {key for future in puts for key in future.result()}
            stop.set()
            cancelled = sum(future.result() for future in transactions)

        client = aws_clients.dynamodb(backend_url)
        stored = {
            item["id"]["S"] for item in client.scan(TableName=table, ConsistentRead=True)["Items"]
        }
        assert cancelled > 0
        assert stored == written  # nothing erased, and no cancelled transaction's Put
