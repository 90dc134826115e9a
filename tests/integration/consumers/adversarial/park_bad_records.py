# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Batch consumer that parks the records it cannot process on the dead-letter queue
itself, with the reason, and goes on with the batch (so one bad record never makes the
good ones come back). Each order is stored with the guarded put.
Right verdict: pass; the poison record is dead-lettered (by the consumer), nothing else.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")
DLQ_URL = os.environ["DLQ_URL"]


def handler(event, context):
    for record in event["Records"]:
        try:
            order = json.loads(record["body"])
            if int(order["quantity"]) <= 0:
                raise ValueError(f"order {order['id']}: quantity must be positive")
        except (ValueError, KeyError) as exc:
            sqs.send_message(
                QueueUrl=DLQ_URL,
                MessageBody=record["body"],
                MessageAttributes={"error": {"DataType": "String", "StringValue": str(exc)}},
            )
            continue
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
