"""Claim, then complete, done right: an in-progress claim expires, a redelivery retries until
the claim is complete or expired, and the order's write is conditional (a crashed holder may
have written it already)."""

from __future__ import annotations

import time
from typing import Any

from _jobs import dynamodb, job, order_item, table  # type: ignore[import-not-found]

CLAIM_TTL_S = 20


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity, _ = job(event)
    claim = {"id": {"S": f"claim#{order_id}"}}
    now = time.time()
    try:
        dynamodb().put_item(
            TableName=table(),
            Item={
                **claim,
                "status": {"S": "IN_PROGRESS"},
                "expires": {"N": str(now + CLAIM_TTL_S)},
            },
            ConditionExpression="attribute_not_exists(id) OR (#s = :busy AND expires < :now)",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":busy": {"S": "IN_PROGRESS"}, ":now": {"N": str(now)}},
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        found = dynamodb().get_item(TableName=table(), Key=claim, ConsistentRead=True)
        if found.get("Item", {}).get("status", {}).get("S") == "COMPLETE":
            return {"id": order_id, "duplicate": True}
        raise RuntimeError(f"order {order_id} is in progress elsewhere; retry") from None
    try:
        dynamodb().put_item(
            TableName=table(),
            Item=order_item(order_id, quantity),
            ConditionExpression="attribute_not_exists(id)",
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        pass
    dynamodb().update_item(
        TableName=table(),
        Key=claim,
        UpdateExpression="SET #s = :done",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":done": {"S": "COMPLETE"}},
    )
    return {"id": order_id, "duplicate": False}
