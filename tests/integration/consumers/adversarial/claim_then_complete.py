# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: claim the order (status PENDING, conditional), do the work, then complete it.

A copy that finds PENDING raises (retried later); one that finds COMPLETED is acked.
"""

import json
import os
import time

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={"id": {"S": body["id"]}, "status": {"S": "PENDING"}},
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            status = e.response.get("Item", {}).get("status", {}).get("S")
            if status == "COMPLETED":
                continue
            raise RuntimeError(f"order {body['id']} in progress, retry later")
        time.sleep(0.05)  # the work
        ddb.update_item(
            TableName=TABLE,
            Key={"id": {"S": body["id"]}},
            UpdateExpression="SET #s = :done, quantity = :q, total_cents = :t",
            ConditionExpression="#s = :pending",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":done": {"S": "COMPLETED"},
                ":pending": {"S": "PENDING"},
                ":q": {"N": str(body["quantity"])},
                ":t": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
