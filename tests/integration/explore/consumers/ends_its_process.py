"""A consumer that ends its own process once its order is stored (``os._exit``), as a
handler that "restarts" on a condition might: nothing of the exploration may run on."""

from __future__ import annotations

import os
from typing import Any

from _jobs import dynamodb, job, order_item, table  # type: ignore[import-not-found]


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity, _ = job(event)
    dynamodb().put_item(TableName=table(), Item=order_item(order_id, quantity))
    os._exit(7)
