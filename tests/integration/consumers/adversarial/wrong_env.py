# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer deployed with the wrong variable name (ORDERS_TABLE instead of TABLE_NAME)."""

import json
import os

import boto3

ddb = boto3.resource("dynamodb")


def handler(event, context):
    table = ddb.Table(os.environ["ORDERS_TABLE"])
    for record in event["Records"]:
        body = json.loads(record["body"])
        table.put_item(Item={"id": body["id"], "quantity": body["quantity"]})
