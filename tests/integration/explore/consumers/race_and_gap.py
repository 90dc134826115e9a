"""Two bugs in one consumer: a read-then-write race, and a crash gap between two writes.

    delivery A                   delivery B            (the race)
    GetItem ─► absent
                                 GetItem ─► absent
    PutItem {id, quantity}
                                 PutItem {id, quantity} ─► written again

    delivery A                   its redelivery        (the gap)
    GetItem ─► absent
    PutItem {id, quantity}
    ✗ crash
                                 GetItem ─► found: skipped, acknowledged
                                 (the total is never written)

The order is stored in two writes: its quantity, then its total. A delivery that finds
the order skips it, so a crash between the two leaves it without a total for good.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import Any

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    for record in event["Records"]:
        order = json.loads(record["body"])
        key = {"id": order["id"]}
        if "Item" in table.get_item(Key=key, ConsistentRead=True):
            continue  # stored already
        table.put_item(Item={**key, "quantity": Decimal(order["quantity"])})
        table.update_item(
            Key=key,
            UpdateExpression="SET total_cents = :t",
            ExpressionAttributeValues={":t": Decimal(order["quantity"] * 250 + 100)},
        )
    return {"batchItemFailures": []}
