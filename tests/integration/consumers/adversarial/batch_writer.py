# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer for batches of 10: one batch write per invocation (fast!)."""

import json
import os

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    # overwrite_by_pkeys: the same order twice in one batch would be refused by DynamoDB
    with table.batch_writer(overwrite_by_pkeys=["id"]) as batch:
        for record in event["Records"]:
            body = json.loads(record["body"])
            batch.put_item(
                Item={
                    "id": body["id"],
                    "quantity": body["quantity"],
                    "total_cents": body["quantity"] * 250 + 100,
                }
            )
