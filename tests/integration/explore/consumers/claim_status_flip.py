"""Store the order as PROCESSING, details and all, do the work, then flip it to DONE.

The first write is a conditional put, and a delivery whose put is rejected takes the
order for handled. A crash between the put and the update leaves the order PROCESSING
for good: every detail and every attribute is there, only the status says it was never
done.
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
                    "status": "PROCESSING",
                    "quantity": order["quantity"],
                    "total_cents": order["quantity"] * 250 + 100,
                },
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            continue
        # ... charge the customer, reserve the stock ...
        table.update_item(
            Key={"id": order["id"]},
            UpdateExpression="SET #s = :done",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":done": "DONE"},
        )
