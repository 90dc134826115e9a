# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Adds each order's quantity to its customer's running total (ADD): not idempotent."""

import json
import os
import zlib

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        customer = f"customer-{zlib.crc32(body['id'].encode()) % 3}"
        table.update_item(
            Key={"id": customer},
            UpdateExpression="ADD amount :q, orders :o",
            ExpressionAttributeValues={":q": body["quantity"], ":o": {body["id"]}},
        )
