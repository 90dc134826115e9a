"""Claim, then complete; a delivery that finds a claim trusts its holder to finish.

delivery A (receive 1)              delivery A (receive 2, after the visibility timeout)
PutItem claim (if absent)
...the environment crashes...
                                    PutItem claim -> rejected (claimed)
                                    acknowledged: the order is never written
"""

from __future__ import annotations

from typing import Any

from _jobs import dynamodb, job, order_item, table  # type: ignore[import-not-found]


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity, _ = job(event)
    claim = {"id": {"S": f"claim#{order_id}"}}
    try:
        dynamodb().put_item(
            TableName=table(),
            Item={**claim, "status": {"S": "IN_PROGRESS"}},
            ConditionExpression="attribute_not_exists(id)",
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        return {"id": order_id, "duplicate": True}
    dynamodb().put_item(TableName=table(), Item=order_item(order_id, quantity))
    dynamodb().update_item(
        TableName=table(),
        Key=claim,
        UpdateExpression="SET #s = :done",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":done": {"S": "COMPLETE"}},
    )
    return {"id": order_id, "duplicate": False}
