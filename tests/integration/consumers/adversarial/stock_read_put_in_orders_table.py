# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Keeps its stock level beside the orders in one table: reads it, puts it back less the
order's units, then stores the order once (guarded)."""

import json
import os

import boto3
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        level = table.get_item(Key={"id": "stock#widget"}).get("Item")
        units = level["units"] if level else 1000
        table.put_item(Item={"id": "stock#widget", "units": units - order["quantity"]})
        try:
            table.put_item(
                Item={"id": order["id"], "quantity": order["quantity"]},
                ConditionExpression=Attr("id").not_exists(),
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
