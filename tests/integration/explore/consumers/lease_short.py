"""A lease taken for less time than the work it covers, then an unconditional write.

The lease is ``lease#{id}``, put if absent or expired (``lease_until < :now``) for 15 s; the
work (a payment provider's call) takes 20 s; the order is then put unconditionally. A
delivery that finds the lease held leaves the message to come back; one that finds the
order stored skips it. A holder that stalls past its lease lets another delivery in::

    delivery A                             delivery B
    PutItem lease (until t=15) ─► ok
    GetItem order ─► absent
    ...stalls (t=29)...
                                           PutItem lease (expired) ─► ok
                                           GetItem order ─► absent
    ...works 20 s, PutItem order           ...works 20 s, PutItem order ─► written again
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
LEASE_S = 15
WORK_S = 20


def take_lease(order_id: str, owner: str, lease_s: int) -> None:
    now = int(time.time())
    try:
        table.put_item(
            Item={"id": f"lease#{order_id}", "owner": owner, "lease_until": now + lease_s},
            ConditionExpression="attribute_not_exists(id) OR lease_until < :now",
            ExpressionAttributeValues={":now": now},
        )
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        raise RuntimeError(f"order {order_id} is leased by another delivery; retry") from None


def order_item(order: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": order["id"],
        "quantity": order["quantity"],
        "total_cents": order["quantity"] * 250 + 100,
    }


def handler(event: dict[str, Any], context: Any) -> None:
    for record in event["Records"]:
        order = json.loads(record["body"])
        take_lease(order["id"], context.aws_request_id, LEASE_S)
        if "Item" in table.get_item(Key={"id": order["id"]}, ConsistentRead=True):
            continue
        time.sleep(WORK_S)  # the payment provider
        table.put_item(Item=order_item(order))
