"""The dual write: the lab's guard, then the event. Kept as a variant to show the lost event.

The order is stored with the lab's conditional put; only when the put was accepted is
``OrderPlaced`` published to ``ORDERS_TOPIC_ARN``. A completed duplicate is
acknowledged without publishing, so copies announce nothing twice. But the table and
the topic are two writes, and nothing ties them together::

    delivery A                                   delivery A, redelivered
    PutItem if attribute_not_exists ─► stored
    ── crash before the publish ──
                                                 PutItem if attribute_not_exists
                                                   ─► ConditionalCheckFailed, same details
                                                 a completed duplicate: acked, no publish
                                                 (the order is stored, its event never sent)

The redelivery cannot tell "stored and announced" from "stored, then crashed": the
event is lost for good. On a FIFO topic the deduplication id is the business id, which
changes nothing here: a sink can drop a second publish, never bring back a missing one.
"""

from __future__ import annotations

from typing import Any

from consumer._events import order_placed, publish
from consumer._orders import handle, result
from consumer.conditional import put_order


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, write_order)


def write_order(order_id: str, quantity: int) -> dict[str, Any]:
    """Store one order, then announce it if this call stored it; the lab's result."""
    if not put_order(order_id, quantity):
        return result(order_id, quantity, duplicate=True)
    publish(order_id, order_placed(order_id, quantity), dedup_id=order_id)
    return result(order_id, quantity, duplicate=False)
