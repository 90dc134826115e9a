"""Keys the order by the SQS messageId and writes it unconditionally.

A redelivery of the same message (its acknowledgement lost) has the same messageId and
writes the same item again: the outcome is written twice.
"""

from __future__ import annotations

from typing import Any

from _jobs import dynamodb, job, table  # type: ignore[import-not-found]


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity, record = job(event)
    dynamodb().put_item(TableName=table(), Item=item(record["messageId"], order_id, quantity))
    return {"id": order_id}


def item(message_id: str, order_id: str, quantity: int) -> dict[str, Any]:
    return {
        "id": {"S": message_id},
        "order_id": {"S": order_id},
        "quantity": {"N": str(quantity)},
        "total_cents": {"N": str(quantity * 250 + 100)},
    }
