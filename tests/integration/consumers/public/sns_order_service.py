# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Order service. The orders queue is subscribed to the orders topic without raw message
delivery: each body is an SNS notification, the order a JSON string in its Message."""

import json

import boto3

orders_table = boto3.resource("dynamodb").Table("Orders")


def lambda_handler(event, context):
    for record in event["Records"]:
        notification = json.loads(record["body"])
        order = json.loads(notification["Message"])
        orders_table.put_item(
            Item={
                "orderId": order["orderId"],
                "customerId": order["customerId"],
                "quantity": order["quantity"],
                "status": "PLACED",
            }
        )
    return {"statusCode": 200}
