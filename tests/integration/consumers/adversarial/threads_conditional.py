# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer processing a batch's records in parallel threads, each with the lab's conditional put."""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
pool = ThreadPoolExecutor(max_workers=10)


def process(record):
    body = json.loads(record["body"])
    item = {
        "id": {"S": body["id"]},
        "quantity": {"N": str(body["quantity"])},
        "total_cents": {"N": str(body["quantity"] * 250 + 100)},
    }
    try:
        ddb.put_item(
            TableName=TABLE,
            Item=item,
            ConditionExpression="attribute_not_exists(id)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if e.response.get("Item") != item:
            raise ValueError("different details")


def handler(event, context):
    list(pool.map(process, event["Records"]))
