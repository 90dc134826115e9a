# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that "replaces" the order: delete whatever is there, then put the new one."""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        ddb.delete_item(TableName=TABLE, Key={"id": {"S": body["id"]}})
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
