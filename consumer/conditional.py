"""The lab's guard: one atomic conditional PutItem keyed on the business id.

    delivery A                         delivery B (same business id)
    PutItem if attribute_not_exists ─► accepted
                                       PutItem if attribute_not_exists ─► ConditionalCheckFailed
                                                                          + ALL_OLD = A's item
                                       old == requested ? duplicate, ack : conflict, raise

DynamoDB evaluates the condition and the write as one operation, so no second
writer can slip in between a check and a write. Only
``ConditionalCheckFailedException`` is an expected outcome; a different stored
item (same id, other details) or any other error raises, so the message is
retried and, after ``maxReceiveCount``, dead-lettered instead of silently acked.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from consumer._orders import dynamodb, handle, order_item, result, table_name


class ConflictingOrderError(ValueError):
    """The business id is already stored with different details."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, write_order)


def write_order(order_id: str, quantity: int) -> dict[str, Any]:
    """Store one order; the lab's result, or raise to have the message retried."""
    stored = put_order(order_id, quantity)
    return result(order_id, quantity, duplicate=not stored)


def put_order(order_id: str, quantity: int) -> bool:
    """The guarded put: True when this call stored the order, False for a completed
    duplicate (the same details already stored); raises otherwise."""
    item = order_item(order_id, quantity)
    try:
        dynamodb().put_item(
            TableName=table_name(),
            Item=item,
            ConditionExpression="attribute_not_exists(id)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if error.response.get("Item") != item:
            raise ConflictingOrderError("Order ID already exists with different details") from error
        return False
    return True
