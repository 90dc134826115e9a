"""A conditional write after 20 s of work, reporting the time it saw: for the virtual clock."""

from __future__ import annotations

import datetime
import time
from typing import Any

from _jobs import dynamodb, job, order_item, table  # type: ignore[import-not-found]


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity, _ = job(event)
    started = time.monotonic()
    time.sleep(20)
    try:
        dynamodb().put_item(
            TableName=table(),
            Item=order_item(order_id, quantity),
            ConditionExpression="attribute_not_exists(id)",
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        pass
    return {
        "slept_s": time.monotonic() - started,
        "now_s": time.time(),
        "utc": datetime.datetime.now(datetime.UTC).isoformat(),
        "remaining_ms": context.get_remaining_time_in_millis(),
    }
