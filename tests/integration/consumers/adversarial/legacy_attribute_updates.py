# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer from an old codebase: AttributeUpdates guarded by Expected."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        quantity = {"N": str(body["quantity"])}
        total = {"N": str(body["quantity"] * 250 + 100)}
        try:
            ddb.update_item(
                TableName=TABLE,
                Key={"id": {"S": body["id"]}},
                AttributeUpdates={
                    "quantity": {"Action": "PUT", "Value": quantity},
                    "total_cents": {"Action": "PUT", "Value": total},
                },
                Expected={"id": {"Exists": False}},
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            stored = ddb.get_item(
                TableName=TABLE, Key={"id": {"S": body["id"]}}, ConsistentRead=True
            )
            item = stored.get("Item", {})
            if item.get("quantity") != quantity or item.get("total_cents") != total:
                raise ValueError(f"order {body['id']} already stored with other details")
