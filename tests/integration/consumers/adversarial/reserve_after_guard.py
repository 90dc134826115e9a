# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Stores the order once (guarded), and reserves its stock only when this delivery stored it.

The stock is also stamped with the last order reserved, and a lock on the order is taken
and given back around the work: neither repeats a change."""

import json
import os
import time

import boto3
from botocore.exceptions import ClientError

ddb = boto3.resource("dynamodb")
orders = ddb.Table(os.environ["TABLE_NAME"])
stock = ddb.Table(os.environ["STOCK_TABLE"])


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        lock = {"sku": f"lock#{order['id']}"}
        for _ in range(100):
            try:
                stock.put_item(Item=lock, ConditionExpression="attribute_not_exists(sku)")
                break
            except ClientError as e:
                if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                time.sleep(0.02)  # another delivery holds it
        else:
            raise RuntimeError("order locked for too long")
        try:
            item = {"id": order["id"], "quantity": order["quantity"]}
            try:
                orders.put_item(
                    Item=item,
                    ConditionExpression="attribute_not_exists(id)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as e:
                if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                continue  # stored by an earlier delivery, which reserved its stock
            stock.update_item(
                Key={"sku": "widget"},
                UpdateExpression="ADD reserved :q SET last_order = :o",
                ExpressionAttributeValues={":q": order["quantity"], ":o": order["id"]},
            )
        finally:
            stock.delete_item(Key=lock)
