# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Inbox consumer: keeps every message as it came, keyed on the SQS messageId (ID)."""

import json
import os
from datetime import datetime, timezone

import boto3

table = boto3.resource("dynamodb").Table(os.environ["INBOX_TABLE"])


def lambda_handler(event, context):
    for record in event["Records"]:
        table.put_item(
            Item={
                "ID": record["messageId"],
                "body": json.loads(record["body"]),
                "receivedAt": datetime.now(timezone.utc).isoformat(),
            }
        )
    return {"batchItemFailures": []}
