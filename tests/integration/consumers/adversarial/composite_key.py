# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer for a single-table design (pk, sk), guard written with #placeholders."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        item = {
            "pk": {"S": "ORDER#" + body["id"]},
            "sk": {"S": "ORDER"},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        }
        try:
            ddb.put_item(
                TableName=TABLE,
                Item=item,
                ConditionExpression="attribute_not_exists(#pk) AND attribute_not_exists(#sk)",
                ExpressionAttributeNames={"#pk": "pk", "#sk": "sk"},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if e.response.get("Item") != item:
                raise
