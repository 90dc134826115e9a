"""Claim, then complete: a conditional put claims the order as PENDING, an update completes it.

A delivery whose claim is rejected takes the order for done and skips it. When the
environment crashes between the two writes, the redelivery finds the PENDING claim,
skips it and is acknowledged: the order stays PENDING, its details never stored.
"""

from __future__ import annotations

import json
import os
from decimal import Decimal
from typing import Any

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    for record in event["Records"]:
        order = json.loads(record["body"])
        try:
            table.put_item(
                Item={"id": order["id"], "status": "PENDING"},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue  # claimed already
            raise
        table.update_item(
            Key={"id": order["id"]},
            UpdateExpression="SET #s = :done, quantity = :q, amount = :a",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":done": "DONE",
                ":q": Decimal(order["quantity"]),
                ":a": Decimal(order["quantity"] * 250 + 100),
            },
        )
    return {"batchItemFailures": []}
