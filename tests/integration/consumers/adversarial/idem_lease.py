# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with its own idempotency record: idem#<id> INPROGRESS (1 s lease), write, COMPLETED.

Timeline of the race the lease is meant to close:
  A: take idem#X (INPROGRESS, expires now+1s) -> put order -> ... dies before COMPLETED
  B (redelivery, 2 s later): lease expired -> takes idem#X -> put order AGAIN
The first attempt's process dies between its write and marking the record COMPLETED.
"""

import json
import os
import time

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
LEASE_S = 1.0


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        idem_key = {"id": {"S": f"idem#{body['id']}"}}
        now = time.time()
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={
                    **idem_key,
                    "status": {"S": "INPROGRESS"},
                    "expires_at": {"N": str(now + LEASE_S)},
                },
                ConditionExpression="attribute_not_exists(id) OR (#s = :inprogress AND expires_at < :now)",
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":inprogress": {"S": "INPROGRESS"},
                    ":now": {"N": str(now)},
                },
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            current = ddb.get_item(TableName=TABLE, Key=idem_key, ConsistentRead=True).get(
                "Item", {}
            )
            if current.get("status") == {"S": "COMPLETED"}:
                continue
            raise RuntimeError(f"order {body['id']} is being processed")
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
        if record["attributes"]["ApproximateReceiveCount"] == "1":
            os._exit(1)  # the process dies here on the first attempt
        ddb.update_item(
            TableName=TABLE,
            Key=idem_key,
            UpdateExpression="SET #s = :done",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":done": {"S": "COMPLETED"}},
        )
