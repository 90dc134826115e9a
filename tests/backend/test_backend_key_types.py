"""A key of the wrong type on the embedded backend: refused at once, as DynamoDB refuses it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from botocore.exceptions import ClientError

from tests.backend import aws_clients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

# The typed form wrapped once more, as a resource's client sends an already typed item.
_MAP_KEY = {"id": {"M": {"S": {"S": "order-1"}}}}
_KEY_MESSAGE = "The provided key element does not match the schema"
_PUT_MESSAGE = (
    "One or more parameter values were invalid: Type mismatch for key id expected: S actual: M"
)


@pytest.fixture(scope="module")
def dynamo(backend_url: str) -> Iterator[tuple[DynamoDBClient, str]]:
    with aws_clients.table(backend_url) as name:
        # One attempt (aws_clients): moto's 500 was otherwise retried for about 25 s.
        yield aws_clients.dynamodb(backend_url), name


def _calls(client: DynamoDBClient, table: str) -> dict[str, tuple[Callable[[], Any], str]]:
    return {
        "put": (lambda: client.put_item(TableName=table, Item=_MAP_KEY), _PUT_MESSAGE),
        "put returning the old item": (
            lambda: client.put_item(TableName=table, Item=_MAP_KEY, ReturnValues="ALL_OLD"),
            _PUT_MESSAGE,
        ),
        "get": (lambda: client.get_item(TableName=table, Key=_MAP_KEY), _KEY_MESSAGE),
        "update": (
            lambda: client.update_item(
                TableName=table,
                Key=_MAP_KEY,
                UpdateExpression="SET q = :q",
                ExpressionAttributeValues={":q": {"N": "1"}},
            ),
            _KEY_MESSAGE,
        ),
        "delete": (lambda: client.delete_item(TableName=table, Key=_MAP_KEY), _KEY_MESSAGE),
    }


@pytest.mark.parametrize("call", ["put", "put returning the old item", "get", "update", "delete"])
def test_a_key_of_the_wrong_type_is_a_validation_error(
    dynamo: tuple[DynamoDBClient, str], call: str
) -> None:
    client, table = dynamo
    send, message = _calls(client, table)[call]
    with pytest.raises(ClientError) as refused:
        send()
    error = refused.value.response["Error"]
    assert (error["Code"], error["Message"]) == ("ValidationException", message)
    assert client.scan(TableName=table)["Items"] == []


@pytest.mark.parametrize("return_values", ["NONE", "ALL_OLD"])
def test_a_put_without_the_key_says_which_key_is_missing(
    dynamo: tuple[DynamoDBClient, str], return_values: Any
) -> None:
    # DynamoDB names the missing key whether or not the old item is asked for (the write
    # observer asks for it on every put).
    client, table = dynamo
    with pytest.raises(ClientError) as refused:
        client.put_item(
            TableName=table, Item={"orderId": {"S": "order-1"}}, ReturnValues=return_values
        )
    error = refused.value.response["Error"]
    assert (error["Code"], error["Message"]) == (
        "ValidationException",
        "One or more parameter values were invalid: Missing the key id in the item",
    )
    assert client.scan(TableName=table)["Items"] == []
