"""No guard at all: every delivery writes. The lab's starting point.

Every redelivery and every producer resend overwrites the order; when two
copies carry different details the last writer silently wins.
"""

from __future__ import annotations

from typing import Any

from consumer._orders import dynamodb, handle, order_item, result, table_name


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, write_order)


def write_order(order_id: str, quantity: int) -> dict[str, Any]:
    """Store one order; the lab's result, or raise to have the message retried."""
    dynamodb().put_item(TableName=table_name(), Item=order_item(order_id, quantity))
    return result(order_id, quantity, duplicate=False)
