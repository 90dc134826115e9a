# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer storing under id = "ORDER#<id>" (single-table habit), conditional put."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        item = {
            "id": {"S": "ORDER#" + body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
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
                raise
