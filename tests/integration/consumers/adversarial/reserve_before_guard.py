# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Reserves the order's stock, then stores the order once (guarded): every copy reserves."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
STOCK = os.environ["STOCK_TABLE"]


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        ddb.update_item(
            TableName=STOCK,
            Key={"sku": {"S": "widget"}},
            UpdateExpression="ADD reserved :q",
            ExpressionAttributeValues={":q": {"N": str(order["quantity"])}},
        )
        item = {"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}}
        try:
            ddb.put_item(
                TableName=TABLE,
                Item=item,
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if e.response.get("Item") != item:
                raise
