# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Batch consumer that treats an order it already has as suspect: the record is parked on
the dead-letter queue for someone to look at, with the bad ones, all in one
SendMessageBatch once the batch is done.
Right verdict: fail; the second copy of an order is a valid message dead-lettered (an
unexpected dead letter: the queue fills with duplicates nobody can act on).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")
DLQ_URL = os.environ["DLQ_URL"]


def handler(event, context):
    parked = []
    for record in event["Records"]:
        order = json.loads(record["body"])
        if order["quantity"] <= 0:
            parked.append(record)
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
            parked.append(record)
    if parked:
        sqs.send_message_batch(
            QueueUrl=DLQ_URL,
            Entries=[{"Id": str(i), "MessageBody": r["body"]} for i, r in enumerate(parked)],
        )
