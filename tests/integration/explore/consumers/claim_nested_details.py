"""Claim, then complete, with the order's details kept in a map of their own.

The claim is ``{id, status: PENDING, details: {}}``, put if absent; the completion sets
``status = DONE`` and fills ``details`` with the quantity and the total. A delivery whose
claim is rejected skips the order, so a crash between the two writes leaves the claim,
with its empty map, for good.
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
                Item={"id": order["id"], "status": "PENDING", "details": {}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            continue
        table.update_item(
            Key={"id": order["id"]},
            UpdateExpression="SET #s = :s, details = :d",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":s": "DONE",
                ":d": {"quantity": order["quantity"], "total_cents": order["quantity"] * 250 + 100},
            },
        )
