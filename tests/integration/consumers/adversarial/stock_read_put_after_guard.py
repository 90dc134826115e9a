# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Stores the order once (guarded), and only the copy that stored it takes the units from
the stock level it read and puts the level back."""

import json
import os
from decimal import Decimal

import boto3
from botocore.exceptions import ClientError

dynamodb = boto3.resource("dynamodb")
orders = dynamodb.Table(os.environ["TABLE_NAME"])
stock = dynamodb.Table(os.environ["STOCK_TABLE"])


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        try:
            orders.put_item(
                Item={"id": order["id"], "quantity": Decimal(order["quantity"])},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            continue  # a copy of an order already stored: its units are taken
        level = stock.get_item(Key={"sku": "widget"}).get("Item") or {
            "sku": "widget",
            "units": Decimal(1000),
        }
        level["units"] -= Decimal(order["quantity"])
        stock.put_item(Item=level)
