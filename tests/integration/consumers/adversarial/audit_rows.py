# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with an audit trail: one audit row per delivery, the order stored once."""

import json
import os
import time
import uuid

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": f"audit#{uuid.uuid4()}"},
                "order_id": {"S": body["id"]},
                "event": {"S": "processed"},
                "at": {"N": str(int(time.time() * 1000))},
            },
        )
        item = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        }
        try:
            ddb.put_item(
                TableName=TABLE,
                Item=item,
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if e.response.get("Item") != item:
                raise
    return {"status": "ok"}
