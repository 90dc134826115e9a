# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: update_item SET (an "upsert") on every message."""

import json
import os

import boto3

ddb = boto3.client("dynamodb")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        ddb.update_item(
            TableName=os.environ["TABLE_NAME"],
            Key={"id": {"S": body["id"]}},
            UpdateExpression="SET quantity = :q, total_cents = :t",
            ExpressionAttributeValues={
                ":q": {"N": str(body["quantity"])},
                ":t": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
