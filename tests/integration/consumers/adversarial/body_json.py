# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that keeps the message as it came: the raw body under the order id, conditional."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        order_id = json.loads(record["body"])["id"]
        item = {"id": {"S": order_id}, "payload": {"S": record["body"]}}
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
            if json.loads(e.response["Item"]["payload"]["S"]) != json.loads(record["body"]):
                raise ValueError(f"order {order_id} already stored with other details")
