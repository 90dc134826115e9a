# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: the batch's records in parallel (thread pool), check then put."""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
pool = ThreadPoolExecutor(max_workers=8)


def process(record):
    body = json.loads(record["body"])
    if "Item" not in table.get_item(Key={"id": body["id"]}):
        table.put_item(Item={"id": body["id"], "quantity": body["quantity"]})


def handler(event, context):
    list(pool.map(process, event["Records"]))
