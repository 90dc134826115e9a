# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer processing a batch's records in parallel threads: get, then put if new."""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
pool = ThreadPoolExecutor(max_workers=10)


def process(record):
    body = json.loads(record["body"])
    if "Item" in ddb.get_item(TableName=TABLE, Key={"id": {"S": body["id"]}}):
        return
    ddb.put_item(
        TableName=TABLE,
        Item={
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        },
    )


def handler(event, context):
    list(pool.map(process, event["Records"]))
