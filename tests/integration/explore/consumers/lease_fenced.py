"""The same lease, held past the function timeout and given back when done, and the
order's write conditional.

The lease lasts the function timeout and 5 s more, so no holder that is still running
loses it, and its holder deletes it once the order is stored (a copy that waits for it
need not wait for it to expire); the order is put only if absent, so even a holder whose
lease was taken over cannot write it twice.

A lease that outlives the visibility timeout has its price: a holder that timed out
keeps it 5 s past the message's return, so that receive is refused too, and with the
lab's three receives one more fault dead-letters a valid copy. With five receives
(``lab-five-receives.toml``, AWS's advice) no stall or timeout does.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from botocore.exceptions import ClientError
from lease_short import WORK_S, order_item, table, take_lease  # type: ignore[import-not-found]

LEASE_S = int(os.environ.get("AWS_LAMBDA_FUNCTION_TIMEOUT", "30")) + 5


def handler(event: dict[str, Any], context: Any) -> None:
    for record in event["Records"]:
        order = json.loads(record["body"])
        take_lease(order["id"], context.aws_request_id, LEASE_S)
        if "Item" not in table.get_item(Key={"id": order["id"]}, ConsistentRead=True):
            time.sleep(WORK_S)  # the payment provider
            try:
                table.put_item(
                    Item=order_item(order), ConditionExpression="attribute_not_exists(id)"
                )
            except ClientError as error:
                if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
        try:
            table.delete_item(
                Key={"id": f"lease#{order['id']}"},
                ConditionExpression="#o = :me",
                ExpressionAttributeNames={"#o": "owner"},
                ExpressionAttributeValues={":me": context.aws_request_id},
            )
        except ClientError as error:
            if error.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
