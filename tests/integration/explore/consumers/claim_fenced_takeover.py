"""Claim with an expiry and a token; a later delivery takes an expired claim over with its own.

The claim sets ``status = PENDING``, ``claimed_by`` (the invocation's request id) and
``claim_expires_at`` past the function timeout, if the order is absent or its claim has
expired. A delivery that finds a live claim leaves the message to come back; one that
finds the order DONE skips it. The completion is conditional on still holding the claim,
so a holder whose claim was taken over cannot complete the order::

    delivery A                              delivery B (A's message, back later)
    claim: PENDING, claimed_by=A ─► ok
    ✗ crash (or timed out)
                                            claim: refused (A's claim is live) ─► retry
                                            ... the claim expires ...
                                            claim: claimed_by=B ─► ok (takes it over)
                                            complete if claimed_by = B ─► DONE
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
CLAIM_S = int(os.environ.get("AWS_LAMBDA_FUNCTION_TIMEOUT", "30")) + 5


def _refused(error: ClientError) -> bool:
    return bool(error.response["Error"]["Code"] == "ConditionalCheckFailedException")


def handler(event: dict[str, Any], context: Any) -> None:
    for record in event["Records"]:
        order = json.loads(record["body"])
        me, now = context.aws_request_id, int(time.time())
        try:
            table.update_item(
                Key={"id": order["id"]},
                UpdateExpression="SET #s = :pending, claimed_by = :me, claim_expires_at = :until",
                ConditionExpression=(
                    "attribute_not_exists(id) OR (#s = :pending AND claim_expires_at < :now)"
                ),
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":pending": "PENDING",
                    ":me": me,
                    ":until": now + CLAIM_S,
                    ":now": now,
                },
            )
        except ClientError as error:
            if not _refused(error):
                raise
            found = table.get_item(Key={"id": order["id"]}, ConsistentRead=True).get("Item")
            if found is not None and found.get("status") == "DONE":
                continue
            raise RuntimeError(f"order {order['id']} is claimed by another delivery") from None
        table.update_item(
            Key={"id": order["id"]},
            UpdateExpression=(
                "SET #s = :done, quantity = :q, total_cents = :t REMOVE claim_expires_at"
            ),
            ConditionExpression="claimed_by = :me AND #s = :pending",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":done": "DONE",
                ":pending": "PENDING",
                ":me": me,
                ":q": order["quantity"],
                ":t": order["quantity"] * 250 + 100,
            },
        )
