# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Order service: its queue is subscribed to the orders topic (no raw message delivery),
so each body is an SNS notification whose Message is the order as a JSON string."""

import json
import os

import boto3

dynamodb = boto3.resource("dynamodb")
orders = dynamodb.Table(os.environ.get("TABLE_NAME", "Orders"))


def handler(event, context):
    for record in event["Records"]:
        notification = json.loads(record["body"])
        order = json.loads(notification["Message"])
        orders.put_item(
            Item={
                "orderId": order["orderId"],
                "quantity": order["quantity"],
                "status": "ACCEPTED",
            }
        )
