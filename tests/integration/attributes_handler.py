"""A consumer that needs the producer's message attributes: it stores the order with the
attributes it was sent with, and refuses a record without them."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import boto3


def handler(event: dict[str, Any], context: Any) -> None:
    table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
    for record in event["Records"]:
        attributes = record["messageAttributes"]
        body = json.loads(record["body"])
        table.put_item(
            Item={
                "id": body["id"],
                "quantity": body["quantity"],
                "origin": attributes["origin"]["stringValue"],
                "priority": attributes["priority"]["stringValue"],
                "priority_type": attributes["priority"]["dataType"],
                "key": attributes["key"]["stringValue"],
                "blob": base64.b64decode(attributes["blob"]["binaryValue"]).hex(),
            },
            ConditionExpression="attribute_not_exists(id)",
        )
