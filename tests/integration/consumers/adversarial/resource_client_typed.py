# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that reuses the resource's client (table.meta.client) with a typed item.

The resource's client serialises plain Python values itself: the typed item is wrapped
once more ({"id": {"M": {"S": ...}}}) and DynamoDB refuses every put.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["TABLE_NAME"]
ddb = boto3.resource("dynamodb").Table(TABLE).meta.client


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        item = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        }
        try:
            ddb.put_item(TableName=TABLE, Item=item, ConditionExpression="attribute_not_exists(id)")
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
