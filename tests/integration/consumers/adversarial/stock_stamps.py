# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Every copy notes on the shop's item when an order was last seen (a clock reading in
seconds and one in milliseconds, and a time to live) and which one; the order is stored
once (guarded)."""

import json
import os
import time

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
STOCK = os.environ["STOCK_TABLE"]


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        now = time.time()
        ddb.update_item(
            TableName=STOCK,
            Key={"sku": {"S": "widget"}},
            UpdateExpression="SET seen_s = :s, seen_ms = :ms, expires = :ttl, last_order = :o",
            ExpressionAttributeValues={
                ":s": {"N": str(int(now))},
                ":ms": {"N": str(int(now * 1000))},
                ":ttl": {"N": str(int(now) + 7 * 24 * 3600)},
                ":o": {"S": order["id"]},
            },
        )
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
