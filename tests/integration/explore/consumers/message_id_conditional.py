"""Keys the order by the SQS messageId, written only if absent: a redelivery of the same
message is refused and acknowledged. (A producer's resend has a new messageId: this guard
does not cover it.)"""

from __future__ import annotations

from typing import Any

from _jobs import dynamodb, job, table  # type: ignore[import-not-found]
from message_id_overwrite import item  # type: ignore[import-not-found]


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity, record = job(event)
    try:
        dynamodb().put_item(
            TableName=table(),
            Item=item(record["messageId"], order_id, quantity),
            ConditionExpression="attribute_not_exists(id)",
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        return {"id": order_id, "duplicate": True}
    return {"id": order_id, "duplicate": False}
