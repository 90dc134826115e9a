"""An order service whose queue is subscribed to an SNS topic without raw message delivery:
each record's body is the SNS notification, the order a JSON string in its ``Message``.
An unconditional put keyed on ``orderId`` (not idempotent: a resend writes again)."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3


def handler(event: dict[str, Any], context: Any) -> None:
    table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
    for record in event["Records"]:
        order = json.loads(json.loads(record["body"])["Message"])
        table.put_item(Item=order)
