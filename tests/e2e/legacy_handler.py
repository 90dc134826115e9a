"""A guarded consumer on the legacy API (AttributeUpdates with Expected).

Its conditional update is atomic, so it never writes an order twice, but the
observer cannot compute what a legacy AttributeUpdates stored: the evidence is
incomplete, and the run must say inconclusive rather than pass or fail.
"""

from __future__ import annotations

import json
import os
from typing import Any

import boto3
from botocore.exceptions import ClientError


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    body = json.loads(event["Records"][0]["body"])
    try:
        boto3.client("dynamodb").update_item(
            TableName=os.environ["TABLE_NAME"],
            Key={"id": {"S": body["id"]}},
            AttributeUpdates={"quantity": {"Value": {"N": str(body["quantity"])}, "Action": "PUT"}},
            Expected={"id": {"Exists": False}},
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return {"id": body["id"], "duplicate": True}
    return {"id": body["id"], "duplicate": False}
