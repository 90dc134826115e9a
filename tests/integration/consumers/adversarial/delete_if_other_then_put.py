# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: a resend with other details replaces the order (conditional delete of a
different quantity, then the guarded put); an identical resend is left alone."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        key = {"id": {"S": body["id"]}}
        q = {"N": str(body["quantity"])}
        try:
            ddb.delete_item(
                TableName=TABLE,
                Key=key,
                ConditionExpression="attribute_exists(id) AND quantity <> :q",
                ExpressionAttributeValues={":q": q},
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={
                    **key,
                    "quantity": q,
                    "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                },
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
