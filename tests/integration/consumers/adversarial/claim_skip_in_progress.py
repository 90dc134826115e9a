# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: claim the order (a CLAIM# item, status IN_PROGRESS, conditional), do the
work (the order item), then mark the claim COMPLETE.

A delivery that finds a claim, in progress or complete, skips the order and is acked:
"someone else is on it". A claim left IN_PROGRESS by a crash is never finished.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        claim_key = {"id": {"S": "CLAIM#" + body["id"]}}
        found = ddb.get_item(TableName=TABLE, Key=claim_key, ConsistentRead=True).get("Item")
        if found is not None:
            continue  # IN_PROGRESS or COMPLETE: skip
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={**claim_key, "status": {"S": "IN_PROGRESS"}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            continue  # claimed by a concurrent delivery
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
        ddb.update_item(
            TableName=TABLE,
            Key=claim_key,
            UpdateExpression="SET #s = :done",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":done": {"S": "COMPLETE"}},
        )
