# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer for batches of 10: one batch write per invocation, straight from the boto3 docs."""

import json
import os

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    with table.batch_writer() as batch:
        for record in event["Records"]:
            body = json.loads(record["body"])
            batch.put_item(
                Item={
                    "id": body["id"],
                    "quantity": body["quantity"],
                    "total_cents": body["quantity"] * 250 + 100,
                }
            )
