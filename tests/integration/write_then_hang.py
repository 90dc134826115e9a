"""Writes the order, then hangs: cut off by the run's deadline before it returns."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3


def handler(event: dict[str, Any], context: Any) -> None:
    body = json.loads(event["Records"][0]["body"])
    boto3.client("dynamodb").put_item(
        TableName=os.environ["TABLE_NAME"],
        Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
    )
    time.sleep(60)
