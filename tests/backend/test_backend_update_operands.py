"""An update's operands are read from the item before the update, as DynamoDB reads them.

moto resolved ``SET a = b`` to b's own value object, which a DELETE or ADD of b in the
same update then changed in place (a property test comparing ``apply_update`` with the
backend found it). The answers here are what ``apply_update``, the observer's model of
an update, computes: both must agree for the observer's item-after to be the stored one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from loadtest.model.dynamodb.updates import apply_update
from tests.backend import aws_clients

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

KEY = {"id": {"S": "k"}}
BEFORE: dict[str, Any] = {
    **KEY,
    "sset": {"SS": ["a", "b"]},
    "l": {"L": [{"S": "z"}]},
}
VALUES: dict[str, Any] = {":x": {"SS": ["a"]}, ":y": {"SS": ["c"]}, ":n": {"N": "1"}}


@pytest.fixture(scope="module")
def dynamo(backend_url: str) -> Iterator[tuple[DynamoDBClient, str]]:
    with aws_clients.table(backend_url) as name:
        yield aws_clients.dynamodb(backend_url), name


@pytest.mark.parametrize(
    ("expression", "copied"),
    [
        ("SET num = sset DELETE sset :x", {"SS": ["a", "b"]}),
        ("DELETE sset :x SET num = sset", {"SS": ["a", "b"]}),
        ("SET num = sset ADD sset :y", {"SS": ["a", "b"]}),
        ("SET num = if_not_exists(sset, :y) DELETE sset :x", {"SS": ["a", "b"]}),
        ("SET num = l, l[0] = :n", {"L": [{"S": "z"}]}),
    ],
)
def test_an_operand_is_the_value_before_the_update(
    dynamo: tuple[DynamoDBClient, str], expression: str, copied: dict[str, Any]
) -> None:
    client, table = dynamo
    client.put_item(TableName=table, Item=BEFORE)
    values = {name: value for name, value in VALUES.items() if name in expression}
    stored = client.update_item(
        TableName=table,
        Key=KEY,
        UpdateExpression=expression,
        ExpressionAttributeValues=values,
        ReturnValues="ALL_NEW",
    )["Attributes"]
    assert stored["num"] == copied
    assert stored == apply_update(BEFORE, KEY, expression, None, values)
