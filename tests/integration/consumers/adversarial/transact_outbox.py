# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: the order (only if new) and its outbox event in one transaction."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        order = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        }
        try:
            ddb.transact_write_items(
                TransactItems=[
                    {
                        "Put": {
                            "TableName": TABLE,
                            "Item": order,
                            "ConditionExpression": "attribute_not_exists(id)",
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                    {
                        "Put": {
                            "TableName": TABLE,
                            "Item": {
                                "id": {"S": f"outbox#{body['id']}"},
                                "type": {"S": "OrderCreated"},
                                "order_id": {"S": body["id"]},
                            },
                        }
                    },
                ]
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons = e.response.get("CancellationReasons") or []
            first = reasons[0] if reasons else {}
            if first.get("Code") != "ConditionalCheckFailed":
                raise
            if first.get("Item") is not None and first["Item"] != order:
                raise ValueError("order exists with different details")
            # already created: nothing to do
