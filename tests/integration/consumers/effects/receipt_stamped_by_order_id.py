# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the receipt written to S3 as receipts/<order id>.json
on every delivery, stamped with the time it was written.

A copy rewrites the one receipt with its own processed_at: still one object per order,
and the order's details (the amount) are the same each time. Right verdict: pass, one
object per order (duplicate_effects 0, conflicting_effects 0, lost_effects 0).
"""

import json
import os
import time

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
s3 = boto3.client("s3")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        receipt = {
            "order": body["id"],
            "amount_cents": body["quantity"] * 250 + 100,
            "processed_at": time.time_ns(),
        }
        s3.put_object(
            Bucket=os.environ["RECEIPTS_BUCKET"],
            Key=f"receipts/{body['id']}.json",
            Body=json.dumps(receipt).encode(),
        )
