# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: accumulate the order total (ADD) on every message."""

import json
import os

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        table.update_item(
            Key={"id": body["id"]},
            UpdateExpression="SET quantity = :q ADD total_cents :t",
            ExpressionAttributeValues={":q": body["quantity"], ":t": body["quantity"] * 250 + 100},
        )
