# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Batch consumer that deletes every message as soon as it has it ("so that a slow batch
is never delivered twice"), then stores the orders in turn. A record that fails stops
the batch: the records after it were deleted already and are never stored.
Right verdict: fail, the orders after the poison record lost.
"""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")
QUEUE_URL = os.environ["QUEUE_URL"]


def handler(event, context):
    for record in event["Records"]:
        sqs.delete_message(QueueUrl=QUEUE_URL, ReceiptHandle=record["receiptHandle"])
    for record in event["Records"]:
        order = json.loads(record["body"])
        if order["quantity"] <= 0:
            raise ValueError(f"order {order['id']}: quantity must be positive")
        ddb.put_item(
            TableName=os.environ["TABLE_NAME"],
            Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
            ConditionExpression="attribute_not_exists(id)",
        )
