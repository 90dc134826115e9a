# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that writes each record of its batch from a thread pool: the lab's
conditional put, submitted to a ThreadPoolExecutor and awaited with result()."""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def store(body):
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
    except ddb.exceptions.ConditionalCheckFailedException:
        pass


def handler(event, context):
    with ThreadPoolExecutor(max_workers=4) as pool:
        for future in [pool.submit(store, json.loads(r["body"])) for r in event["Records"]]:
            future.result()
