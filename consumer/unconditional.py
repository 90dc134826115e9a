"""No guard at all: every delivery writes. The lab's starting point.

Every redelivery and every producer resend overwrites the order; when two
copies carry different details the last writer silently wins.
"""

from __future__ import annotations

from typing import Any

from consumer._orders import dynamodb, order_item, parse_single_job, result, table_name


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    order_id, quantity = parse_single_job(event)
    dynamodb().put_item(TableName=table_name(), Item=order_item(order_id, quantity))
    return result(order_id, quantity, duplicate=False)
