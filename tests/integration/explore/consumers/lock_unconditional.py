"""A lock with an expiry around a check and an unconditional write (the lock is the only guard).

    delivery A                          delivery B
    PutItem lock (expires now+10 s)
    GetItem order -> absent
    ...stalls past the lock's expiry...
                                        PutItem lock (expired: taken)
                                        GetItem order -> absent
                                        PutItem order -> written
    PutItem order -> written again

Nothing fences A's write once its lock has expired.
"""

from __future__ import annotations

import time
from typing import Any

from _jobs import dynamodb, job, order_item, table  # type: ignore[import-not-found]

LOCK_TTL_S = 10


def acquire(order_id: str) -> dict[str, Any]:
    lock = {"id": {"S": f"lock#{order_id}"}}
    now = time.time()
    try:
        dynamodb().put_item(
            TableName=table(),
            Item={**lock, "expires": {"N": str(now + LOCK_TTL_S)}},
            ConditionExpression="attribute_not_exists(id) OR expires < :now",
            ExpressionAttributeValues={":now": {"N": str(now)}},
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        raise RuntimeError(f"order {order_id} is locked by another delivery; retry") from None
    return lock


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity, _ = job(event)
    lock = acquire(order_id)
    try:
        found = dynamodb().get_item(
            TableName=table(), Key={"id": {"S": order_id}}, ConsistentRead=True
        )
        if "Item" in found:
            return {"id": order_id, "duplicate": True}
        write(order_id, quantity)
        return {"id": order_id, "duplicate": False}
    finally:
        dynamodb().delete_item(TableName=table(), Key=lock)


def write(order_id: str, quantity: int) -> None:
    dynamodb().put_item(TableName=table(), Item=order_item(order_id, quantity))
