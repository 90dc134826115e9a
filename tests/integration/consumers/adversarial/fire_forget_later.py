# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that saves in the background (after an enrichment delay) and meanwhile
notifies a partner API; it does not wait for the save."""

import json
import os
import threading
import time

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def put(body):
    try:
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
            ConditionExpression="attribute_not_exists(id)",
        )
        return True
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return False


def _save_later(body):
    time.sleep(0.2)  # enrich first
    put(body)


def handler(event, context):
    for r in event["Records"]:
        threading.Thread(target=_save_later, args=(json.loads(r["body"]),), daemon=True).start()
    time.sleep(0.05)  # notify the partner API
    return {"accepted": len(event["Records"])}
