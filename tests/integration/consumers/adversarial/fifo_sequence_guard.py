# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on a FIFO queue: the order keeps the SequenceNumber that wrote it, and a
write only lands if its message is newer ("attribute_not_exists(id) OR seq < :seq")."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        seq = record["attributes"]["SequenceNumber"]
        try:
            ddb.put_item(
                TableName=TABLE,
                Item={
                    "id": {"S": body["id"]},
                    "quantity": {"N": str(body["quantity"])},
                    "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                    "seq": {"N": seq},
                },
                ConditionExpression="attribute_not_exists(id) OR seq < :seq",
                ExpressionAttributeValues={":seq": {"N": seq}},
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # an older or the same message: already applied
