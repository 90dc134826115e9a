# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that never lets one bad message block the queue: every ClientError is logged and acked."""

import json
import logging
import os

import boto3
from botocore.exceptions import ClientError

logger = logging.getLogger()
ddb = boto3.client("dynamodb")
TABLE = os.environ.get("ORDERS_TABLE", "orders")  # set in template.yaml... in prod


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
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
        except ClientError:
            logger.exception("could not save order %s, skipping", body["id"])
