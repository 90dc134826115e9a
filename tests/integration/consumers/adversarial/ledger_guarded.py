# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Adds each order's quantity once: the order id joins a set, the ADD is conditional on its absence."""

import json
import os
import zlib

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        customer = f"customer-{zlib.crc32(body['id'].encode()) % 3}"
        try:
            table.update_item(
                Key={"id": customer},
                UpdateExpression="ADD amount :q, orders :o",
                ConditionExpression="attribute_not_exists(orders) OR NOT contains(orders, :id)",
                ExpressionAttributeValues={
                    ":q": body["quantity"],
                    ":o": {body["id"]},
                    ":id": body["id"],
                },
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
