# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Order consumer that works a batch's records in parallel: each claims its order, prices
it, then completes the claim if it is still pending."""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def process(record):
    order = json.loads(record["body"])
    ddb.put_item(
        TableName=TABLE,
        Item={"id": {"S": order["id"]}, "status": {"S": "PENDING"}},
    )
    time.sleep(0.2)  # pricing
    try:
        ddb.update_item(
            TableName=TABLE,
            Key={"id": {"S": order["id"]}},
            UpdateExpression="SET #s = :done, quantity = :q, total_cents = :t",
            ConditionExpression="#s = :pending",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":done": {"S": "DONE"},
                ":pending": {"S": "PENDING"},
                ":q": {"N": str(order["quantity"])},
                ":t": {"N": str(order["quantity"] * 250 + 100)},
            },
        )
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise


def handler(event, context):
    with ThreadPoolExecutor(max_workers=10) as pool:
        list(pool.map(process, event["Records"]))
