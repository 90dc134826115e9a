# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: plain put, asks for the old item to log overwrites (ReturnValues=ALL_OLD)."""

import json
import os

import boto3

ddb = boto3.client("dynamodb")


def handler(event, context):
    seen = []
    for record in event["Records"]:
        body = json.loads(record["body"])
        resp = ddb.put_item(
            TableName=os.environ["TABLE_NAME"],
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
            ReturnValues="ALL_OLD",
        )
        seen.append({"id": body["id"], "overwrote": "Attributes" in resp})
    return {"seen": seen}
