# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that saves the order, then calls a slow downstream service (first attempt hangs)."""

import json
import os
import time

import boto3

ddb = boto3.client("dynamodb")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        ddb.put_item(
            TableName=os.environ["TABLE_NAME"],
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
        if record["attributes"]["ApproximateReceiveCount"] == "1":
            time.sleep(30)  # the notification service is down; no client timeout set
