"""A customer's orders and total, kept with optimistic locking: read the item and its
version, put it back with the order listed and ``version + 1`` only if the version is still
the one read, and on a refusal read again and retry.

    delivery A (order-a)                 delivery B (order-b)
    GetItem customer ─► version 1
                                         GetItem customer ─► version 1
                                         PutItem if version = 1 ─► version 2
    PutItem if version = 1 ─► refused
    GetItem customer ─► version 2, order-b listed
    PutItem if version = 2 ─► version 3, both orders listed

An order already listed is skipped, so a copy adds nothing twice.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
ATTEMPTS = 5


def _refused(error: ClientError) -> bool:
    return bool(error.response["Error"]["Code"] == "ConditionalCheckFailedException")


def add_order(order: dict[str, Any], *, retry_blind: bool = False) -> None:
    key = {"id": f"customer#{order['customer']}"}
    for _ in range(ATTEMPTS):
        current: dict[str, Any] = table.get_item(Key=key, ConsistentRead=True).get("Item", {})
        orders = list(current.get("orders", []))
        if order["id"] in orders:
            return
        version = int(current.get("version", 0))
        item = {
            **key,
            "orders": [*orders, order["id"]],
            "total_quantity": int(current.get("total_quantity", 0)) + order["quantity"],
            "version": version + 1,
        }
        try:
            if current:
                table.put_item(
                    Item=item,
                    ConditionExpression="version = :v",
                    ExpressionAttributeValues={":v": version},
                )
            else:
                table.put_item(Item=item, ConditionExpression="attribute_not_exists(id)")
            return
        except ClientError as error:
            if not _refused(error):
                raise
            if retry_blind:
                # "Someone else bumped the version; ours is the latest word": written over.
                table.put_item(Item=item)
                return
    raise RuntimeError(f"customer {order['customer']} kept changing; retry the message")


def handler(event: dict[str, Any], context: Any) -> None:
    for record in event["Records"]:
        add_order(json.loads(record["body"]))
