"""A user's own handler: keys items by the SQS messageId (a classic mistake)."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
    for record in event["Records"]:
        job = json.loads(record["body"])
        table.put_item(
            Item={"id": record["messageId"], "order_id": job["id"], "quantity": job["quantity"]},
            ConditionExpression="attribute_not_exists(id)",
        )
    return {"remaining_ms": context.get_remaining_time_in_millis()}
