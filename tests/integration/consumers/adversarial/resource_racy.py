# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer (resource API): look it up, save it if new."""

import json
import os
from decimal import Decimal

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        existing = table.get_item(Key={"id": order["id"]}).get("Item")
        if existing:
            print(f"order {order['id']} already processed, skipping")
            continue
        qty = Decimal(str(order["quantity"]))
        table.put_item(Item={"id": order["id"], "quantity": qty, "total_cents": qty * 250 + 100})
    return {"ok": True}
