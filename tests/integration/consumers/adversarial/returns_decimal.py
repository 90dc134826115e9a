# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that returns totals as Decimals (as boto3 reads numbers)."""

import json
import os
from decimal import Decimal

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def put(body):
    try:
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
            ConditionExpression="attribute_not_exists(id)",
        )
        return True
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return False


def handler(event, context):
    for r in event["Records"]:
        put(json.loads(r["body"]))
    return {"total": Decimal("12.50"), "count": Decimal(len(event["Records"]))}
