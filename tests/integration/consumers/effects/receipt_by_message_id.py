# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the receipt written to S3 as receipts/<SQS messageId>.json.

The same code as the receipt keyed by order id, but the key is the message's: a
producer's resend is a new message with a new messageId, so every copy leaves another
receipt for the same order. Right verdict: fail, duplicate_effects = copies - 1 per order.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
s3 = boto3.client("s3")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        total = body["quantity"] * 250 + 100
        item = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(total)},
        }
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item=item,
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if e.response.get("Item") != item:
                raise ValueError("different details")
        receipt = {"id": body["id"], "quantity": body["quantity"], "total_cents": total}
        s3.put_object(
            Bucket=os.environ["RECEIPTS_BUCKET"],
            Key=f"receipts/{record['messageId']}.json",
            Body=json.dumps(receipt, sort_keys=True).encode(),
            ContentType="application/json",
        )
