"""The same lock, with the write itself conditional: an expired lock cannot cause a second write."""

from __future__ import annotations

from typing import Any

import lock_unconditional  # type: ignore[import-not-found]
from _jobs import dynamodb, job, table  # type: ignore[import-not-found]


def write(order_id: str, quantity: int) -> None:
    try:
        dynamodb().put_item(
            TableName=table(),
            Item=lock_unconditional.order_item(order_id, quantity),
            ConditionExpression="attribute_not_exists(id)",
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        pass  # written by the delivery whose lock expired under it: same order, done


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity, _ = job(event)
    lock = lock_unconditional.acquire(order_id)
    try:
        write(order_id, quantity)
        return {"id": order_id}
    finally:
        dynamodb().delete_item(TableName=table(), Key=lock)
