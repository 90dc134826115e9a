# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Order service, bulk style: parse the whole batch first, then store each order."""

import json
import os

import boto3

orders = boto3.resource("dynamodb").Table(os.environ.get("TABLE_NAME", "Orders"))


def handler(event, context):
    parsed = [json.loads(json.loads(r["body"])["Message"]) for r in event["Records"]]
    for order in parsed:
        orders.put_item(Item={"orderId": order["orderId"], "quantity": order["quantity"]})
