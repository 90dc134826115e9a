"""Reserve an order's units with ``ADD``, guarded by the SQS messageIds already applied.

The order item is created if absent (``if_not_exists`` on its details), and each delivery
adds the quantity to ``reserved`` and its messageId to ``applied``, on condition that the
messageId is not there yet. A redelivery of the same message (a lost acknowledgement, a
timeout) is refused; a producer's resend carries a new messageId and reserves the units
again.
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
            table.update_item(
                Key={"id": order["id"]},
                UpdateExpression=(
                    "SET quantity = if_not_exists(quantity, :q), "
                    "total_cents = if_not_exists(total_cents, :t) "
                    "ADD reserved :q, applied :m"
                ),
                ConditionExpression="attribute_not_exists(applied) OR NOT contains(applied, :mid)",
                ExpressionAttributeValues={
                    ":q": order["quantity"],
                    ":t": order["quantity"] * 250 + 100,
                    ":m": {record["messageId"]},
                    ":mid": record["messageId"],
                },
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
