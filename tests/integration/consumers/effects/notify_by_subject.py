# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: tells the ops topic (e-mail subscribers) about each order before its
conditional put. The order id is only in the Subject ("Order <id> placed"); the Message is
the same text for every order.

The notification is outside the guard: every copy notifies again. Right verdict: fail,
duplicate_effects = copies - 1 per order, the order found in the Subject.
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
            TopicArn=os.environ["OPS_TOPIC_ARN"],
            Subject=f"Order {body['id']} placed",
            Message="A new order was placed. Open the back office to see it.",
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
