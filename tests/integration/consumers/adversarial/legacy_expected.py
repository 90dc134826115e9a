# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer from an old codebase: the legacy Expected parameter as its guard."""

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
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        }
        try:
            ddb.put_item(TableName=TABLE, Item=item, Expected={"id": {"Exists": False}})
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            stored = ddb.get_item(TableName=TABLE, Key={"id": item["id"]}, ConsistentRead=True)
            if stored.get("Item") != item:
                raise ValueError(f"order {body['id']} already stored with other details")
