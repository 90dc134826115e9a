"""The legacy Expected with ConditionalOperator on the embedded backend, as DynamoDB judges it."""

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


def _absent_or_quantity(quantity: str) -> dict[str, Any]:
    return {
        "id": {"Exists": False},
        "quantity": {"ComparisonOperator": "EQ", "AttributeValueList": [{"N": quantity}]},
    }


def test_or_writes_when_any_condition_holds(dynamo: tuple[DynamoDBClient, str]) -> None:
    client, table = dynamo
    item = {"id": {"S": "or-1"}, "quantity": {"N": "2"}}
    for _ in range(2):  # absent, then the same quantity stored: both hold
        client.put_item(
            TableName=table, Item=item, Expected=_absent_or_quantity("2"), ConditionalOperator="OR"
        )
    with pytest.raises(ClientError) as refused:  # present, another quantity: neither holds
        client.put_item(
            TableName=table,
            Item={**item, "quantity": {"N": "3"}},
            Expected=_absent_or_quantity("3"),
            ConditionalOperator="OR",
        )
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    client.update_item(
        TableName=table,
        Key={"id": item["id"]},
        AttributeUpdates={"note": {"Value": {"S": "seen"}}},
        Expected=_absent_or_quantity("2"),
        ConditionalOperator="OR",
    )
    stored = client.get_item(TableName=table, Key={"id": item["id"]})["Item"]
    assert stored == {**item, "note": {"S": "seen"}}


def test_and_is_the_default(dynamo: tuple[DynamoDBClient, str]) -> None:
    client, table = dynamo
    with pytest.raises(ClientError) as refused:  # absent, so quantity = 2 cannot hold
        client.put_item(
            TableName=table,
            Item={"id": {"S": "and-1"}, "quantity": {"N": "2"}},
            Expected=_absent_or_quantity("2"),
        )
    assert refused.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
