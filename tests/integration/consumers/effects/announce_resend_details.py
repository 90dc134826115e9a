# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then OrderPlaced on SNS if the put stored the order. A
resend whose details differ from the stored order is not raised: it is acknowledged and
announced again with its own details ("the latest word wins downstream"), the stored
order left as it was.

An identical copy is skipped. A resend with another quantity tells subscribers a second,
different OrderPlaced for an order the table keeps with the first quantity. Right verdict:
fail; per order whose resend differs: duplicate_effects 1, conflicting_effects 1, and
lost_outcomes 1 (the resend acknowledged, its details never stored).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")


def publish(order):
    sns.publish(
        TopicArn=os.environ["ORDERS_TOPIC_ARN"],
        Message=json.dumps({"type": "OrderPlaced", **order}),
    )


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        order = {"id": body["id"], "quantity": body["quantity"]}
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            stored = e.response.get("Item", {})
            if stored.get("quantity", {}).get("N") != str(order["quantity"]):
                publish(order)
            continue
        publish(order)
