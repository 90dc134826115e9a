# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with optimistic locking: read the version, write version + 1 only if nobody else did."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        for _ in range(10):
            current = ddb.get_item(
                TableName=TABLE, Key={"id": {"S": body["id"]}}, ConsistentRead=True
            ).get("Item")
            version = int(current["version"]["N"]) if current else 0
            try:
                ddb.put_item(
                    TableName=TABLE,
                    Item={
                        "id": {"S": body["id"]},
                        "quantity": {"N": str(body["quantity"])},
                        "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                        "version": {"N": str(version + 1)},
                    },
                    ConditionExpression="attribute_not_exists(id) OR #v = :v",
                    ExpressionAttributeNames={"#v": "version"},
                    ExpressionAttributeValues={":v": {"N": str(version)}},
                )
                break
            except ClientError as e:
                if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
        else:
            raise RuntimeError("too much contention")
