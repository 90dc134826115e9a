"""A transactional outbox: the order and its event stored together, then relayed.

One ``TransactWriteItems`` puts two items into the orders table, both or neither:

* the order, keyed on the business id, under ``attribute_not_exists(id)`` with
  ``ALL_OLD`` on a failed check (exactly the lab's guard), and
* its outbox row ``outbox#<business id>``: the ``OrderPlaced`` event's text and
  ``status = pending``, under ``attribute_not_exists(id)``.

Then the relay publishes the pending row to the FIFO topic ``ORDERS_TOPIC_ARN`` with
``MessageDeduplicationId`` = the business id and marks the row ``sent``. The crash that
loses the dual write's event is repaired by the redelivery::

    delivery A                                   delivery A, redelivered
    TransactWriteItems order + outbox ─► both stored (outbox row pending)
    ── crash before the publish ──
                                                 TransactWriteItems ─► TransactionCanceled
                                                   CancellationReasons[0] = ConditionalCheckFailed
                                                                          + Item = the stored order
                                                 same details: read the outbox row, still pending
                                                 Publish (dedup id = business id) ─► sent
                                                 mark the row sent; ack

and two deliveries relaying one row at once (a copy taken while the first still works,
a crash after the publish and before the mark) publish twice with one deduplication id,
which the FIFO topic drops::

    delivery A                                   delivery B (same business id)
    TransactWriteItems ─► both stored
                                                 TransactWriteItems ─► cancelled, same details
                                                 outbox row pending
    Publish (dedup id = id) ─► sent
                                                 Publish (dedup id = id) ─► dropped by the topic
    mark sent                                    mark sent ─► already sent: fine

The outbox row lives in the orders table under its own key rather than in a table of
its own: the transaction touches one table, the variant runs on any scenario as the
others do, and the row is a side write (recorded and shown, counted apart from the
outcome). A row is never deleted, so a redelivery always finds out whether the event
left. The order part's ``ConditionalCheckFailed`` with the same details is the only
expected cancellation; other details, or any other reason or error, raise, so the
message is retried and, after ``maxReceiveCount``, dead-lettered. On a standard topic
(no ``.fifo``) nothing drops the second publish of a row relayed twice.
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError

from consumer._events import EVENT_TYPE, order_placed, publish
from consumer._orders import dynamodb, handle, order_item, result, table_name

OUTBOX_PREFIX = "outbox#"
PENDING = "pending"
SENT = "sent"
_OUTBOX_REASONS = frozenset({"None", "ConditionalCheckFailed"})
"""The outbox part's reasons when the order part failed its check: not evaluated, or the
row already there (it is written with its order, so it is)."""


class ConflictingOrderError(ValueError):
    """The business id is already stored with different details."""


class TransactionFailedError(RuntimeError):
    """The transaction was cancelled for a reason other than the order already existing."""


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, write_order)


def outbox_key(order_id: str) -> dict[str, Any]:
    return {"id": {"S": OUTBOX_PREFIX + order_id}}


def outbox_row(order_id: str, quantity: int) -> dict[str, Any]:
    """The pending event written with the order: its own key, the business id as ``order_id``."""
    return {
        **outbox_key(order_id),
        "kind": {"S": EVENT_TYPE},
        "order_id": {"S": order_id},
        "message": {"S": order_placed(order_id, quantity)},
        "status": {"S": PENDING},
    }


def write_order(order_id: str, quantity: int) -> dict[str, Any]:
    """Store one order and its event, relay the event; the lab's result, or raise."""
    stored = store(order_id, quantity)
    relay(order_id)
    return result(order_id, quantity, duplicate=not stored)


def store(order_id: str, quantity: int) -> bool:
    """The transaction: True when it stored the order and its row, False when the same
    order was already stored (its row with it); raises otherwise."""
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
                        "Item": outbox_row(order_id, quantity),
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
        if (
            len(codes) != 2
            or codes[0] != "ConditionalCheckFailed"
            or codes[1] not in _OUTBOX_REASONS
        ):
            raise TransactionFailedError(f"Transaction cancelled: {codes}") from error
        if reasons[0].get("Item") != item:
            raise ConflictingOrderError("Order ID already exists with different details") from error
        return False
    return True


def relay(order_id: str) -> None:
    """Publish the order's outbox row if it is still pending, then mark it sent."""
    row = (
        dynamodb()
        .get_item(TableName=table_name(), Key=outbox_key(order_id), ConsistentRead=True)
        .get("Item")
    )
    if row is None:
        raise TransactionFailedError(f"The order {order_id!r} is stored without its outbox row")
    if row["status"]["S"] != PENDING:
        return
    publish(order_id, row["message"]["S"], dedup_id=order_id)
    try:
        dynamodb().update_item(
            TableName=table_name(),
            Key=outbox_key(order_id),
            UpdateExpression="SET #status = :sent",
            ConditionExpression="#status = :pending",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":sent": {"S": SENT}, ":pending": {"S": PENDING}},
        )
    except ClientError as error:
        # Another delivery relayed the same row and marked it first: the event left.
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
