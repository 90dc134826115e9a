"""A running total per customer, read then written back whole with the order listed in it.

An order already listed is skipped, so a copy of an order adds nothing. Two different
orders of one customer that both read the total before either writes it back: the second
put replaces the first, and one order's quantity (and its place in the list) is lost.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event: dict[str, Any], context: Any) -> None:
    for record in event["Records"]:
        order = json.loads(record["body"])
        key = {"id": f"customer#{order['customer']}"}
        current: dict[str, Any] = table.get_item(Key=key, ConsistentRead=True).get("Item", {})
        orders = list(current.get("orders", []))
        if order["id"] in orders:
            continue
        table.put_item(
            Item={
                **key,
                "total_quantity": current.get("total_quantity", 0) + order["quantity"],
                "orders": [*orders, order["id"]],
            }
        )
