# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with a short-lived lock: take lock#<id> (expires after LOCK_TTL), check, work, save.

If the lock is taken, wait for it (poll) instead of failing the message.
The team sized LOCK_TTL for the usual 100 ms of work; the payment call sometimes takes a second.
"""

import json
import os
import time

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
LOCK_TTL_S = 0.3
WORK_S = 1.0


def acquire(order_id):
    for _ in range(100):
        now = time.time()
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={"id": {"S": f"lock#{order_id}"}, "expires_at": {"N": str(now + LOCK_TTL_S)}},
                ConditionExpression="attribute_not_exists(id) OR expires_at < :now",
                ExpressionAttributeValues={":now": {"N": str(now)}},
            )
            return
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            time.sleep(0.05)
    raise TimeoutError(f"lock for {order_id} not acquired")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        acquire(body["id"])
        try:
            done = ddb.get_item(TableName=TABLE, Key={"id": {"S": body["id"]}}, ConsistentRead=True)
            if "Item" in done:
                continue
            time.sleep(WORK_S)  # charge the card
            ddb.put_item(
                TableName=TABLE,
                Item={
                    "id": {"S": body["id"]},
                    "quantity": {"N": str(body["quantity"])},
                    "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                },
            )
        finally:
            ddb.delete_item(TableName=TABLE, Key={"id": {"S": f"lock#{body['id']}"}})
