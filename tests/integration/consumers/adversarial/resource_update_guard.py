# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer (resource API): update_item guarded by Attr("quantity").not_exists(), ReturnValues=ALL_NEW.

A refused update with the same quantity is a completed duplicate; another quantity raises.
"""

import json
import os

import boto3
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            saved = table.update_item(
                Key={"id": body["id"]},
                UpdateExpression="SET quantity = :q, total_cents = :t",
                ConditionExpression=Attr("quantity").not_exists(),
                ExpressionAttributeValues={
                    ":q": body["quantity"],
                    ":t": body["quantity"] * 250 + 100,
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )["Attributes"]
            print("saved", saved)
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if e.response["Item"]["quantity"]["N"] != str(body["quantity"]):
                raise ValueError("order exists with another quantity")
