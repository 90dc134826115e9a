# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Batch consumer: stores each record (conditional put), then forwards the whole batch to
the shipping queue in one SendMessageBatch, each body naming the SQS message it came from.

Every copy is forwarded again (a copy is only skipped by the table's guard, not by the
forward). Right verdict: fail, duplicate_effects = copies - 1 per order, whichever
batch each copy lands in.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


def handler(event, context):
    entries = []
    for i, record in enumerate(event["Records"]):
        body = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        entries.append(
            {
                "Id": str(i),
                "MessageBody": json.dumps(
                    {
                        "orderId": body["id"],
                        "quantity": body["quantity"],
                        "source": record["messageId"],
                    }
                ),
            }
        )
    sqs.send_message_batch(QueueUrl=os.environ["SHIPPING_QUEUE_URL"], Entries=entries)
