# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer (resource API): Query for the order, put it if none came back."""

import json
import os

import boto3
from boto3.dynamodb.conditions import Key

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        if table.query(KeyConditionExpression=Key("id").eq(body["id"]))["Items"]:
            continue
        table.put_item(
            Item={
                "id": body["id"],
                "quantity": body["quantity"],
                "total_cents": body["quantity"] * 250 + 100,
            }
        )
