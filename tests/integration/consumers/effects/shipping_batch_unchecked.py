# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Batch consumer: stores each record (conditional put), then sends the shipping requests of
the orders it stored in one SendMessageBatch. An order with hold_s waits that long in the
queue (DelaySeconds) before shipping sees it.

SQS takes a delay of at most 900 s: an entry asking for more is refused on its own (the
embedded backend lists it in the answer's Failed, InvalidParameterValue) and the rest of the
batch is sent. The consumer never reads Failed,
so the record is acknowledged and its order never shipped. Right verdict: fail,
lost_effects = the acknowledged messages of the orders held longer than 900 s.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


def handler(event, context):
    requests = []
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
        requests.append(
            {
                "Id": str(len(requests)),
                "MessageBody": json.dumps({"orderId": body["id"], "quantity": body["quantity"]}),
                "DelaySeconds": int(body.get("hold_s", 0)),
            }
        )
    if requests:
        sqs.send_message_batch(QueueUrl=os.environ["SHIPPING_QUEUE_URL"], Entries=requests)
