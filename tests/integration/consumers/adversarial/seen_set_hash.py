# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: remembers a digest of each body it applied in a string set on the order itself."""

import json
import hashlib
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.update_item(
                TableName=TABLE,
                Key={"id": {"S": body["id"]}},
                UpdateExpression="SET quantity = :q, total_cents = :t ADD seen :s",
                ConditionExpression="attribute_not_exists(seen) OR NOT contains(seen, :mid)",
                ExpressionAttributeValues={
                    ":q": {"N": str(body["quantity"])},
                    ":t": {"N": str(body["quantity"] * 250 + 100)},
                    ":s": {"SS": [hashlib.sha256(record["body"].encode()).hexdigest()]},
                    ":mid": {"S": hashlib.sha256(record["body"].encode()).hexdigest()},
                },
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # already applied this message
