"""Deduplicates in memory: a module-level set of the order ids this container processed.

A copy that reaches the same warm execution environment is skipped; one that reaches
another environment (a second one running at the same time, or the one that replaced an
environment that crashed) writes the order again.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
PROCESSED: set[str] = set()


def handler(event: dict[str, Any], context: Any) -> None:
    for record in event["Records"]:
        order = json.loads(record["body"])
        if order["id"] in PROCESSED:
            continue
        PROCESSED.add(order["id"])
        table.put_item(
            Item={
                "id": order["id"],
                "quantity": order["quantity"],
                "total_cents": order["quantity"] * 250 + 100,
            }
        )
