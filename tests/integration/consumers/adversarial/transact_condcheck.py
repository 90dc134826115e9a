# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: one transaction checks the customer exists and puts the order if absent."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
CUSTOMER = {"id": {"S": "customer#42"}}
ddb.put_item(TableName=TABLE, Item={**CUSTOMER, "name": {"S": "Ada"}})  # seed data, at cold start


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        item = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        }
        try:
            ddb.transact_write_items(
                TransactItems=[
                    {
                        "ConditionCheck": {
                            "TableName": TABLE,
                            "Key": CUSTOMER,
                            "ConditionExpression": "attribute_exists(id)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": TABLE,
                            "Item": item,
                            "ConditionExpression": "attribute_not_exists(id)",
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                        }
                    },
                ]
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            reasons = e.response.get("CancellationReasons", [])
            if reasons[0].get("Code") != "None":
                raise RuntimeError("unknown customer")
            if reasons[1].get("Code") != "ConditionalCheckFailed" or reasons[1].get("Item") != item:
                raise ValueError(f"order {body['id']} already stored with other details")
