# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: reads the order with TransactGetItems, puts it when absent (no guard)."""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        got = ddb.transact_get_items(
            TransactItems=[{"Get": {"TableName": TABLE, "Key": {"id": {"S": body["id"]}}}}]
        )
        if got["Responses"][0].get("Item"):
            continue
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
