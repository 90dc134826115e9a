# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Keeps its stock beside the orders in one table: reserves, then stores the order once."""

import json
import os

import boto3
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        table.update_item(
            Key={"id": "stock#widget"},
            UpdateExpression="SET reserved = if_not_exists(reserved, :zero) + :q",
            ExpressionAttributeValues={":zero": 0, ":q": order["quantity"]},
        )
        try:
            table.put_item(
                Item={"id": order["id"], "quantity": order["quantity"]},
                ConditionExpression=Attr("id").not_exists(),
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
