"""A running total per customer, added to with ``ADD`` together with the order's id in a
string set, on condition that the id is not in the set yet: one atomic write per order,
and a copy of an order (a resend, a redelivery) is refused.
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
                Key={"id": f"customer#{order['customer']}"},
                UpdateExpression="ADD total_quantity :q, orders :o",
                ConditionExpression="attribute_not_exists(orders) OR NOT contains(orders, :id)",
                ExpressionAttributeValues={
                    ":q": order["quantity"],
                    ":o": {order["id"]},
                    ":id": order["id"],
                },
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
