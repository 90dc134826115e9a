"""Claim, then complete, right after a crash: a redelivery that finds a PENDING claim takes it over.

The claim is a conditional put of ``{id, status: PENDING}``; the completion an update
conditional on the claim still being PENDING, so exactly one delivery completes the
order. A first receive that finds the claim PENDING leaves the message to come back;
a redelivery that finds it PENDING takes the claim of a crashed holder over. Its own
receive count says nothing of the holder, though: after a timeout, another copy's
redelivery may hold the claim and still be running, and then both do the work.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import Any

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def _rejected(error: ClientError) -> bool:
    return bool(error.response["Error"]["Code"] == "ConditionalCheckFailedException")


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    for record in event["Records"]:
        order = json.loads(record["body"])
        try:
            table.put_item(
                Item={"id": order["id"], "status": "PENDING"},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as error:
            if not _rejected(error):
                raise
            found = table.get_item(Key={"id": order["id"]}, ConsistentRead=True).get("Item", {})
            if found.get("status") == "DONE":
                continue
            if int(record["attributes"]["ApproximateReceiveCount"]) < 2:
                raise RuntimeError(f"order {order['id']} is in progress elsewhere") from None
        try:
            table.update_item(
                Key={"id": order["id"]},
                UpdateExpression="SET #s = :done, quantity = :q, amount = :a",
                ConditionExpression="#s = :pending",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":done": "DONE",
                    ":pending": "PENDING",
                    ":q": Decimal(order["quantity"]),
                    ":a": Decimal(order["quantity"] * 250 + 100),
                },
            )
        except ClientError as error:
            if not _rejected(error):
                raise
    return {"batchItemFailures": []}
