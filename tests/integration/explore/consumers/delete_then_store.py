# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Consumer that deletes its message as soon as it has it ("so that a slow write is
never delivered twice"), then stores the order with a conditional put. A crash between
the delete and the put loses the order: nothing comes back to store it.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


def handler(event, context):
    for record in event["Records"]:
        sqs.delete_message(QueueUrl=os.environ["QUEUE_URL"], ReceiptHandle=record["receiptHandle"])
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
