"""The transactions' ClientRequestToken on the embedded backend, as DynamoDB answers it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError

from tests.backend import aws_clients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient


@pytest.fixture(scope="module")
def dynamo(backend_url: str) -> Iterator[tuple[DynamoDBClient, str]]:
    with aws_clients.table(backend_url) as name:
        yield aws_clients.dynamodb(backend_url), name


def _add(table: str, key: str, amount: int) -> list[Any]:
    return [
        {
            "Update": {
                "TableName": table,
                "Key": {"id": {"S": key}},
                "UpdateExpression": "ADD amount :n",
                "ExpressionAttributeValues": {":n": {"N": str(amount)}},
            }
        }
    ]


def test_a_repeat_with_the_same_token_and_request_writes_nothing(
    dynamo: tuple[DynamoDBClient, str],
) -> None:
    client, table = dynamo
    for _ in range(3):
        client.transact_write_items(TransactItems=_add(table, "once", 5), ClientRequestToken="t-1")
    item = client.get_item(TableName=table, Key={"id": {"S": "once"}})["Item"]
    assert item["amount"] == {"N": "5"}
    # Without a token, every call is applied.
    for _ in range(2):
        client.transact_write_items(TransactItems=_add(table, "twice", 5))
    item = client.get_item(TableName=table, Key={"id": {"S": "twice"}})["Item"]
    assert item["amount"] == {"N": "10"}


def test_the_same_token_with_another_request_is_refused(
    dynamo: tuple[DynamoDBClient, str],
) -> None:
    client, table = dynamo
    client.transact_write_items(TransactItems=_add(table, "other", 1), ClientRequestToken="t-2")
    with pytest.raises(ClientError) as refused:
        client.transact_write_items(TransactItems=_add(table, "other", 2), ClientRequestToken="t-2")
    assert refused.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    item = client.get_item(TableName=table, Key={"id": {"S": "other"}})["Item"]
    assert item["amount"] == {"N": "1"}


def _insert(table: str, key: str, amount: int) -> list[Any]:
    return [
        {
            "Statement": f"INSERT INTO \"{table}\" VALUE {{'id': ?, 'amount': ?}}",
            "Parameters": [{"S": key}, {"N": str(amount)}],
        }
    ]


def test_an_execute_transaction_repeat_with_the_same_token_and_request_writes_nothing(
    dynamo: tuple[DynamoDBClient, str],
) -> None:
    # moto alone applies the repeat: its INSERT finds the item and the transaction is
    # cancelled (DuplicateItem), where DynamoDB answers it as it answered the first.
    client, table = dynamo
    for _ in range(3):
        client.execute_transaction(
            TransactStatements=_insert(table, "px-once", 5), ClientRequestToken="px-1"
        )
    item = client.get_item(TableName=table, Key={"id": {"S": "px-once"}})["Item"]
    assert item["amount"] == {"N": "5"}
    with pytest.raises(ClientError) as refused:
        client.execute_transaction(
            TransactStatements=_insert(table, "px-once", 6), ClientRequestToken="px-1"
        )
    assert refused.value.response["Error"]["Code"] == "IdempotentParameterMismatchException"
    # Without a token of its own (botocore draws a new one per call), the repeat is applied
    # and its INSERT refused.
    client.execute_transaction(TransactStatements=_insert(table, "px-twice", 5))
    with pytest.raises(ClientError) as cancelled:
        client.execute_transaction(TransactStatements=_insert(table, "px-twice", 5))
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
