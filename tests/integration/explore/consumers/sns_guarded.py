"""An SNS-envelope consumer with the lab's guard: one conditional put of the order (the JSON
string in the notification's Message) keyed on orderId; a refused put is a done order."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import boto3


def handler(event: dict[str, Any], context: Any) -> None:
    client = boto3.client("dynamodb")
    for record in event["Records"]:
        order = json.loads(json.loads(record["body"])["Message"])
        with contextlib.suppress(client.exceptions.ConditionalCheckFailedException):
            client.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={
                    "orderId": {"S": order["orderId"]},
                    "quantity": {"N": str(order["quantity"])},
                },
                ConditionExpression="attribute_not_exists(orderId)",
            )
