"""The common bug beyond the table: announce, then check. Kept as a variant to show it.

``OrderPlaced`` is published to ``ORDERS_TOPIC_ARN`` first, then the order is stored
with the lab's conditional put. The put is guarded; the publish is not::

    delivery A                         delivery B (same business id)
    Publish OrderPlaced ─► sent
    PutItem if absent   ─► stored
                                       Publish OrderPlaced ─► sent again
                                       PutItem if absent   ─► ConditionalCheckFailed,
                                                              a completed duplicate: acked

The table holds one order and its write decisions are clean, yet every copy (a
producer's resend, a redelivery after a crash or a visibility timeout) was announced
again. On a FIFO topic each publish carries a fresh deduplication id, as code that only
needs one to satisfy the API does: SNS cannot tell the copies apart either.
"""

from __future__ import annotations

import uuid
from typing import Any

from consumer._events import order_placed, publish
from consumer._orders import handle, result
from consumer.conditional import put_order


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return handle(event, write_order)


def write_order(order_id: str, quantity: int) -> dict[str, Any]:
    """Announce one order, then store it; the lab's result."""
    publish(order_id, order_placed(order_id, quantity), dedup_id=uuid.uuid4().hex)
    stored = put_order(order_id, quantity)
    return result(order_id, quantity, duplicate=not stored)
