# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: the whole order written by one UpdateItem, guarded by attribute_not_exists(id)."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        q = {"N": str(body["quantity"])}
        t = {"N": str(body["quantity"] * 250 + 100)}
        try:
            ddb.update_item(
                TableName=TABLE,
                Key={"id": {"S": body["id"]}},
                UpdateExpression="SET #q = :q, #t = :t",
                ConditionExpression="attribute_not_exists(#id)",
                ExpressionAttributeNames={"#q": "quantity", "#t": "total_cents", "#id": "id"},
                ExpressionAttributeValues={":q": q, ":t": t},
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old = e.response.get("Item", {})
            if old.get("quantity") != q or old.get("total_cents") != t:
                raise ValueError(f"order {body['id']} already stored with other details")
