# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Order service with its table name hard-coded ('Orders', key orderId), writing each order
once with a condition."""

import json

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table("Orders")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            table.put_item(
                Item={"orderId": body["id"], "quantity": body["quantity"]},
                ConditionExpression="attribute_not_exists(orderId)",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
