# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that forwards every order it sees to a FIFO fulfilment queue without a
MessageDeduplicationId: its queue has content-based deduplication, so the same body sent
again within five minutes is taken once. It stores the order with a conditional put first,
but forwards on every delivery, duplicates included.

Right verdict, with the run's queue made as the consumer's is: pass, the queue holding one
message per order (the copies deduplicated by content). Made without content-based
deduplication, AWS would refuse every send: inconclusive, naming the declaration.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        sqs.send_message(
            QueueUrl=os.environ["FULFILMENT_QUEUE_URL"],
            MessageBody=json.dumps({"id": order["id"], "quantity": order["quantity"]}),
            MessageGroupId=order["id"],
        )
