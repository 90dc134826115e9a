# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Skips an order already stored, else stores it and takes its units out of stock.

The check is a read: copies that read "absent" at once all store the order and all take
its units. The stock update asks for the new value (UPDATED_NEW), so no old image comes
back with it."""

import json
import os

import boto3

dynamodb = boto3.resource("dynamodb")
orders = dynamodb.Table(os.environ["TABLE_NAME"])
stock = dynamodb.Table(os.environ["STOCK_TABLE"])


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        if "Item" in orders.get_item(Key={"id": order["id"]}):
            print(f"order {order['id']} already processed, skipping")
            continue
        orders.put_item(Item={"id": order["id"], "quantity": order["quantity"]})
        left = stock.update_item(
            Key={"sku": "widget"},
            UpdateExpression="SET units = if_not_exists(units, :start) - :q",
            ExpressionAttributeValues={":start": 1000, ":q": order["quantity"]},
            ReturnValues="UPDATED_NEW",
        )
        print(f"widget units left: {left['Attributes']['units']}")
