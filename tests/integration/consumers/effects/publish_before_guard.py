# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: announces OrderPlaced on SNS, then stores the order with a conditional put.

The put is guarded, the publish is not: every copy of a message (a resend, a
redelivery) is announced again. Right verdict: fail, duplicate_effects = copies - 1
per order (no duplicate writes: the table is fine).
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
        total = body["quantity"] * 250 + 100
        sns.publish(
            TopicArn=os.environ["ORDERS_TOPIC_ARN"],
            Message=json.dumps(
                {
                    "type": "OrderPlaced",
                    "id": body["id"],
                    "quantity": body["quantity"],
                    "total_cents": total,
                }
            ),
        )
        item = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(total)},
        }
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item=item,
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if e.response.get("Item") != item:
                raise ValueError("different details")
