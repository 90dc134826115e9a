# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that defers each order once: "not ready yet", the job goes back to its
own queue with DelaySeconds and this message is acknowledged; the second pass stores the
order with a conditional put.

Right verdict: pass, one accepted write per order, every other copy's second pass a
rejected write, once the deferred messages have come back and been processed.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")

RETRY_DELAY_S = int(os.environ.get("RETRY_DELAY_S", "2"))


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        if not body.get("deferred"):
            sqs.send_message(
                QueueUrl=os.environ["JOBS_QUEUE_URL"],
                MessageBody=json.dumps({**body, "deferred": True}),
                DelaySeconds=RETRY_DELAY_S,
            )
            continue
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={
                    "id": {"S": body["id"]},
                    "quantity": {"N": str(body["quantity"])},
                    "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                },
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
    return {"ok": True}
