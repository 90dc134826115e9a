# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with a guard... on an attribute name that is never written (orderId vs id)."""

import json
import os

import boto3
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            table.put_item(
                Item={
                    "id": body["id"],
                    "quantity": body["quantity"],
                    "total_cents": body["quantity"] * 250 + 100,
                },
                ConditionExpression=Attr("orderId").not_exists(),
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
