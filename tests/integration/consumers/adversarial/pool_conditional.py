# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: the batch's records in parallel (thread pool), one conditional put each."""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
pool = ThreadPoolExecutor(max_workers=8)


def process(record):
    body = json.loads(record["body"])
    try:
        table.put_item(
            Item={"id": body["id"], "quantity": body["quantity"]},
            ConditionExpression="attribute_not_exists(id)",
        )
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise


def handler(event, context):
    list(pool.map(process, event["Records"]))
