# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that finds its table and queue through its own variables, keyed orderId,
and keeps what its variables said on each item (a plain, unconditional put)."""

import json
import os

import boto3

ddb = boto3.resource("dynamodb")


def handler(event, context):
    table = ddb.Table(os.environ["DYNAMODB_TABLE"])
    for record in event["Records"]:
        body = json.loads(record["body"])
        table.put_item(
            Item={
                "orderId": body["id"],
                "quantity": body["quantity"],
                "seen_queue": os.environ["JOBS_QUEUE_URL"],
                "seen_region": os.environ["WHERE"],
                "seen_dlq": os.environ["DLQ"],
            }
        )
