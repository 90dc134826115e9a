"""A running total per customer: read it, add the order's quantity, write it back.

Each order is recorded with a conditional put first, so a copy of an order adds nothing
twice. Two different orders of one customer that both read the total before either
writes it back: the second put replaces the first, and one order's quantity is gone
from the total (a lost update).
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event: dict[str, Any], context: Any) -> None:
    for record in event["Records"]:
        order = json.loads(record["body"])
        try:
            table.put_item(
                Item={
                    "id": order["id"],
                    "customer": order["customer"],
                    "quantity": order["quantity"],
                },
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
        key = {"id": f"customer#{order['customer']}"}
        current = table.get_item(Key=key, ConsistentRead=True).get("Item", {})
        table.put_item(Item={**key, "total": current.get("total", 0) + order["quantity"]})
