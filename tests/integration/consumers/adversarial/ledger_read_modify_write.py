# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Keeps each customer's running total: read the item, add the order, put it back whole."""

import json
import os
import zlib

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        customer = f"customer-{zlib.crc32(body['id'].encode()) % 3}"
        item = table.get_item(Key={"id": customer}).get("Item") or {
            "id": customer,
            "amount": 0,
            "orders": [],
        }
        item["amount"] = item["amount"] + body["quantity"]
        item["orders"] = list(item["orders"]) + [body["id"]]
        table.put_item(Item=item)
