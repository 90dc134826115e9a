# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then notify the customer and mark the order notified (on every delivery)."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={
                    "id": {"S": body["id"]},
                    "quantity": {"N": str(body["quantity"])},
                    "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                },
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        # "in case the first attempt died before notifying"
        ddb.update_item(
            TableName=TABLE,
            Key={"id": {"S": body["id"]}},
            UpdateExpression="SET notified = :yes",
            ExpressionAttributeValues={":yes": {"BOOL": True}},
        )
