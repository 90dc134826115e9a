# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with a deduplication table: the order's marker (put if absent) and the
order itself in one TransactWriteItems, so both are written or neither. A transaction
cancelled by the marker's condition is an order already processed."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
DEDUP_TABLE = os.environ["DEDUP_TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": DEDUP_TABLE,
                            "Item": {"pk": {"S": f"order#{body['id']}"}},
                            "ConditionExpression": "attribute_not_exists(pk)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": TABLE,
                            "Item": {
                                "id": {"S": body["id"]},
                                "quantity": {"N": str(body["quantity"])},
                                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                            },
                        }
                    },
                ]
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons = e.response.get("CancellationReasons") or []
            if not reasons or reasons[0].get("Code") != "ConditionalCheckFailed":
                raise
            print(f"order {body['id']} already processed")
