# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with a compensating delete: save the order, notify; if notifying fails, delete the order and retry later."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def notify(body, attempt):
    if attempt == "1":
        raise ConnectionError("notification service unavailable")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        item = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        }
        try:
            ddb.put_item(TableName=TABLE, Item=item, ConditionExpression="attribute_not_exists(id)")
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            continue
        try:
            notify(body, record["attributes"]["ApproximateReceiveCount"])
        except ConnectionError:
            ddb.delete_item(TableName=TABLE, Key={"id": {"S": body["id"]}})
            raise
