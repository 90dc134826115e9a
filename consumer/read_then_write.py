"""The common bug: check, then act. Kept as a variant to demonstrate the race.

    delivery A                 delivery B (same business id)
    GetItem ─► absent
                               GetItem ─► absent
    PutItem ─► written
                               PutItem ─► written again (an overwrite)

Both deliveries see "absent" before either writes, so both write. The table
still holds one item, which is why counting items cannot reveal it; the
write observer's item-before can.
"""

from __future__ import annotations

from typing import Any

from consumer._orders import dynamodb, handle, order_item, result, table_name


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, write_order)


def write_order(order_id: str, quantity: int) -> dict[str, Any]:
    """Store one order; the lab's result, or raise to have the message retried."""
    item = order_item(order_id, quantity)
    existing = (
        dynamodb()
        .get_item(TableName=table_name(), Key={"id": item["id"]}, ConsistentRead=True)
        .get("Item")
    )
    if existing is not None:
        if existing != item:
            raise ValueError("Order ID already exists with different details")
        return result(order_id, quantity, duplicate=True)
    dynamodb().put_item(TableName=table_name(), Item=item)
    return result(order_id, quantity, duplicate=False)
