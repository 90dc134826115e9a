# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: announces OrderPlaced on SNS before its conditional put, the order id
only in the message attributes (subscribers filter on them); the message itself is a
fixed text.

The publish is outside the guard: every copy is announced again. Right verdict: fail,
duplicate_effects = copies - 1 per order, found by the orderId attribute.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        sns.publish(
            TopicArn=os.environ["ORDERS_TOPIC_ARN"],
            Message="order placed",
            MessageAttributes={
                "eventType": {"DataType": "String", "StringValue": "OrderPlaced"},
                "orderId": {"DataType": "String", "StringValue": body["id"]},
                "quantity": {"DataType": "Number", "StringValue": str(body["quantity"])},
            },
        )
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
