# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Reads its table's name when imported, as many handlers do."""

import os

import boto3

table = boto3.resource("dynamodb").Table(os.environ["ORDERS_TABLE"])


def handler(event, context):
    for record in event["Records"]:
        table.put_item(Item={"orderId": record["messageId"]})
