# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the receipt written on every delivery the way its
team publishes files: to a staging key named by the SQS messageId, copied to its final key
receipts/<order id>.json, and the staging object deleted.

Readers see only final keys, one per order, written with the same bytes by every copy; a
crash before the delete leaves the staging object until the redelivery (the same message,
the same staging key) writes and deletes it again. Right verdict: pass, one receipt per
order (duplicate_effects 0, lost_effects 0).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
s3 = boto3.client("s3")


def handler(event, context):
    bucket = os.environ["RECEIPTS_BUCKET"]
    for record in event["Records"]:
        body = json.loads(record["body"])
        order = {"id": body["id"], "quantity": body["quantity"]}
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        staging = f"staging/{record['messageId']}.json"
        s3.put_object(Bucket=bucket, Key=staging, Body=json.dumps(order).encode())
        s3.copy_object(
            Bucket=bucket,
            Key=f"receipts/{order['id']}.json",
            CopySource={"Bucket": bucket, "Key": staging},
        )
        s3.delete_object(Bucket=bucket, Key=staging)
