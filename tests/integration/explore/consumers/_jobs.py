"""What the explored consumers share: the job in the record and the order item they store."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3

_client: Any = None


def dynamodb() -> Any:
    global _client
    if _client is None:
        _client = boto3.client("dynamodb")
    return _client


def table() -> str:
    return os.environ["TABLE_NAME"]


def job(event: dict[str, Any]) -> tuple[str, int, dict[str, Any]]:
    """(order id, quantity, record) of the event's one record."""
    record = event["Records"][0]
    body = json.loads(record["body"])
    return str(body["id"]), int(body["quantity"]), record


def order_item(order_id: str, quantity: int) -> dict[str, Any]:
    return {
        "id": {"S": order_id},
        "quantity": {"N": str(quantity)},
        "total_cents": {"N": str(quantity * 250 + 100)},
    }
