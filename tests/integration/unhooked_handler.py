"""A guarded consumer that talks to DynamoDB without an SDK client: signed JSON over urllib.

Its conditional put is atomic, so it never writes an order twice, but the observer
hooks botocore's clients and sees none of these writes: the table holds outcomes no
observed write stored, the evidence is incomplete, and the run must say inconclusive
rather than pass or fail.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any

import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest


def _put(item: dict[str, Any]) -> bool:
    """Whether the conditional put stored ``item`` (False: the order was there already)."""
    region = os.environ["AWS_REGION"]
    endpoint = os.environ["AWS_ENDPOINT_URL"]
    data = json.dumps(
        {
            "TableName": os.environ["TABLE_NAME"],
            "Item": item,
            "ConditionExpression": "attribute_not_exists(id)",
        }
    ).encode()
    headers = {
        "Content-Type": "application/x-amz-json-1.0",
        "X-Amz-Target": "DynamoDB_20120810.PutItem",
    }
    signed = AWSRequest(method="POST", url=endpoint, data=data, headers=headers)
    credentials = botocore.session.get_session().get_credentials()
    assert credentials is not None, "no credentials in the function's environment"
    SigV4Auth(credentials, "dynamodb", region).add_auth(signed)
    request = urllib.request.Request(endpoint, data=data, headers=dict(signed.headers))
    try:
        with urllib.request.urlopen(request, timeout=5):
            return True
    except urllib.error.HTTPError as error:
        if "ConditionalCheckFailed" in error.read().decode():
            return False
        raise


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    body = json.loads(event["Records"][0]["body"])
    item = {
        "id": {"S": body["id"]},
        "quantity": {"N": str(body["quantity"])},
        "total_cents": {"N": str(body["quantity"] * 250 + 100)},
    }
    return {"id": body["id"], "duplicate": not _put(item)}
