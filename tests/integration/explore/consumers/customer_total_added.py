"""Records the order, then adds its quantity to its customer's total with ADD.

The order is put if absent, and a delivery whose put is rejected takes the order for done.
The total is added to atomically, so no two orders lose each other's quantity; but a crash
between the put and the ADD leaves the order recorded and the total without it, and the
redelivery skips the order.
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
        table.update_item(
            Key={"id": f"customer#{order['customer']}"},
            UpdateExpression="ADD #total :q",
            ExpressionAttributeNames={"#total": "total"},
            ExpressionAttributeValues={":q": order["quantity"]},
        )
