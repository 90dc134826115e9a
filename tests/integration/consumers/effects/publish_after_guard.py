# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then OrderPlaced on SNS only if the put stored the order.

Copies are acknowledged without publishing, so duplicates alone never announce twice.
But a crash between the put and the publish leaves the order stored and its event
unsent, and the redelivery sees a completed duplicate. Right verdict: pass without
faults; under crashes mid-handler, fail with lost_effects = the orders whose storing
delivery died before publishing.
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
            continue  # already processed
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
