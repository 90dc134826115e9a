# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that hands the write to a background thread and returns at once
("the write is fast, no need to wait"): the lab's conditional put, never joined."""

import json
import os
import threading

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def store(order):
    try:
        table.put_item(
            Item={
                "id": order["id"],
                "quantity": order["quantity"],
                "total_cents": order["quantity"] * 250 + 100,
            },
            ConditionExpression="attribute_not_exists(id)",
        )
    except table.meta.client.exceptions.ConditionalCheckFailedException:
        pass


def handler(event, context):
    for record in event["Records"]:
        threading.Thread(target=store, args=(json.loads(record["body"]),), daemon=True).start()
    return {"accepted": len(event["Records"])}
