# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer from an old codebase: Expected with ConditionalOperator OR (absent, or the
same quantity already stored) - an identical resend is simply put again."""

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
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={
                    "id": {"S": body["id"]},
                    "quantity": q,
                    "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                },
                Expected={
                    "id": {"Exists": False},
                    "quantity": {"ComparisonOperator": "EQ", "AttributeValueList": [q]},
                },
                ConditionalOperator="OR",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise ValueError(f"order {body['id']} exists with another quantity") from e
            raise
