"""The lab's guard as a transaction: the order and its outbox entry, both or neither.

One ``TransactWriteItems`` puts two items into the orders table, each under its
own ``attribute_not_exists(id)``:

* the order, keyed on the business id (exactly the lab's item), and
* an outbox entry ``outbox#<business id>`` (kind ``order-created``, the order's
  id and total), the event a relay would later publish.

The race it prevents, two copies of one business id taken at once::

    delivery A                                  delivery B (same business id)
    TransactWriteItems                          TransactWriteItems
      Put order   if attribute_not_exists ─┐      Put order   if attribute_not_exists ─┐
      Put outbox  if attribute_not_exists ─┴► committed: both items stored           │
                                                  Put outbox  if attribute_not_exists ─┴► cancelled:
                                                  CancellationReasons[0] = ConditionalCheckFailed
                                                                           + Item = A's order (ALL_OLD)
                                                  old == requested ? duplicate, ack : conflict, raise

DynamoDB checks every condition and applies every write as one step, so B can
neither write the order again nor slip in between A's check and A's write.

Why the outbox shows atomicity. Written as two separate requests the pair can
split::

    delivery A                                  delivery A, retried
    PutItem order  if absent ─► stored
    ── crash before the outbox put ──
                                                PutItem order if absent ─► ConditionalCheckFailed
                                                (a "completed duplicate": acked, and the
                                                 outbox entry is never written — a lost event)

In the transaction the outbox entry lands exactly when the order does, so at
the end of any run the table holds one ``outbox#<id>`` per order and none
without its order; a test can count both.

Only a ``ConditionalCheckFailed`` on the order part is an expected outcome; a
stored order with other details, or any other cancellation reason or error,
raises, so the message is retried and, after ``maxReceiveCount``,
dead-lettered instead of silently acknowledged.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from consumer._orders import dynamodb, handle, order_item, result, table_name

OUTBOX_PREFIX = "outbox#"
OUTBOX_KIND = "order-created"
_EXPECTED_REASONS = frozenset({"None", "ConditionalCheckFailed"})
"""Cancellation reason codes that mean "this part did not cause the cancellation" or "already there"."""


class ConflictingOrderError(ValueError):
    """The business id is already stored with different details."""


class TransactionFailedError(RuntimeError):
    """The transaction was cancelled for a reason other than the order already existing."""


def outbox_item(order: dict[str, Any]) -> dict[str, Any]:
    """The outbox entry written with ``order``: its own key, the business id as ``order_id``."""
    order_id = order["id"]["S"]
    return {
        "id": {"S": OUTBOX_PREFIX + order_id},
        "kind": {"S": OUTBOX_KIND},
        "order_id": {"S": order_id},
        "total_cents": order["total_cents"],
    }


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, write_order)


def write_order(order_id: str, quantity: int) -> dict[str, Any]:
    """Store one order; the lab's result, or raise to have the message retried."""
    item = order_item(order_id, quantity)
    table = table_name()
    try:
        dynamodb().transact_write_items(
            TransactItems=[
                {
                    "Put": {
                        "TableName": table,
                        "Item": item,
                        "ConditionExpression": "attribute_not_exists(id)",
                        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                    }
                },
                {
                    "Put": {
                        "TableName": table,
                        "Item": outbox_item(item),
                        "ConditionExpression": "attribute_not_exists(id)",
                    }
                },
            ]
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "TransactionCanceledException":
            raise
        # botocore parses CancellationReasons into the error response (one per part, in order).
        reasons: list[dict[str, Any]] = error.response.get("CancellationReasons", [])  # type: ignore[assignment]
        codes = [str(reason.get("Code", "None")) for reason in reasons]
        if not codes or codes[0] != "ConditionalCheckFailed":
            raise TransactionFailedError(f"Transaction cancelled: {codes}") from error
        if not _EXPECTED_REASONS.issuperset(codes):
            raise TransactionFailedError(f"Transaction cancelled: {codes}") from error
        if reasons[0].get("Item") != item:
            raise ConflictingOrderError("Order ID already exists with different details") from error
        return result(order_id, quantity, duplicate=True)
    return result(order_id, quantity, duplicate=False)
