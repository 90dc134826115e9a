# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer relying on DynamoDB's own idempotency: TransactWriteItems with a
ClientRequestToken derived from the order id (identical retries within 10 minutes are no-ops)."""

import hashlib
import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        ddb.transact_write_items(
            ClientRequestToken=hashlib.sha256(body["id"].encode()).hexdigest()[:36],
            TransactItems=[
                {
                    "Put": {
                        "TableName": TABLE,
                        "Item": {
                            "id": {"S": body["id"]},
                            "quantity": {"N": str(body["quantity"])},
                            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                        },
                    }
                }
            ],
        )
