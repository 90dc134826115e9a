# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: a processed marker and the running total in one transaction (the marker guards the ADD)."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": TABLE,
                            "Item": {"id": {"S": "processed#" + body["id"]}},
                            "ConditionExpression": "attribute_not_exists(id)",
                        }
                    },
                    {
                        "Update": {
                            "TableName": TABLE,
                            "Key": {"id": {"S": body["id"]}},
                            "UpdateExpression": "SET quantity = :q ADD total_cents :t",
                            "ExpressionAttributeValues": {
                                ":q": {"N": str(body["quantity"])},
                                ":t": {"N": str(body["quantity"] * 250 + 100)},
                            },
                        }
                    },
                ]
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            if e.response["CancellationReasons"][0]["Code"] != "ConditionalCheckFailed":
                raise
