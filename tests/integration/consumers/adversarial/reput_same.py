# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer (resource API): put unless an order with another quantity is stored.

"attribute_not_exists(id) OR quantity = :q": a resend of the same order simply puts it again.
"""

import json
import os
from decimal import Decimal

import boto3
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        qty = Decimal(body["quantity"])
        try:
            table.put_item(
                Item={"id": body["id"], "quantity": qty, "total_cents": qty * 250 + 100},
                ConditionExpression=Attr("id").not_exists() | Attr("quantity").eq(qty),
            )
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ValueError(f"order {body['id']} exists with another quantity") from e
            raise
