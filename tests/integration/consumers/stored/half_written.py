# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Order consumer that claims each order, prices it later... and never gets there."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        order_id = json.loads(record["body"])["id"]
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={"id": {"S": order_id}, "status": {"S": "PENDING"}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        # TODO: price the order and store total_cents, status = "DONE"
