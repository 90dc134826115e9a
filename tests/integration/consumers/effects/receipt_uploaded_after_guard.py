# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the receipt uploaded with boto3's managed transfer
(Bucket.upload_fileobj, which puts the object from s3transfer's worker threads) as
receipts/<order id>.json, only if the put stored the order.

Copies are acknowledged without a receipt: load runs pass, one object per order. A crash
between the put and the upload loses the receipt for good (explore --faults crash:
lost_effects 1).
"""

import io
import json
import os

import boto3
from botocore.exceptions import ClientError

table = boto3.resource("dynamodb").Table(os.environ["TABLE_NAME"])
receipts = boto3.resource("s3").Bucket(os.environ["RECEIPTS_BUCKET"])


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        order = {"id": body["id"], "quantity": body["quantity"]}
        try:
            table.put_item(Item=order, ConditionExpression="attribute_not_exists(id)")
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
        receipts.upload_fileobj(
            io.BytesIO(json.dumps(order).encode()), f"receipts/{order['id']}.json"
        )
