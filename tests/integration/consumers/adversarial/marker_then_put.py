# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: claims processed#<id> first (conditional), then stores the order.

Timeline of what the claim does not cover:
  A: put processed#X (accepted) -> process dies before the order is stored
  A again (redelivery): processed#X exists -> "already done" -> acked, never stored
"""

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
            ddb.put_item(
                TableName=TABLE,
                Item={"id": {"S": f"processed#{body['id']}"}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue  # already processed
            raise
        if record["attributes"]["ApproximateReceiveCount"] == "1":
            os._exit(1)  # the process dies between the claim and the order
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
