# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer whose response object has _asdict() (like a namedtuple): a copy whose
order is already stored is reported as a batch item failure."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def put(body):
    try:
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
            ConditionExpression="attribute_not_exists(id)",
        )
        return True
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        return False


class BatchResponse:
    def __init__(self):
        self.failures = []

    def fail(self, message_id):
        self.failures.append({"itemIdentifier": message_id})

    def _asdict(self):
        return {"batchItemFailures": self.failures}


def handler(event, context):
    response = BatchResponse()
    for r in event["Records"]:
        if not put(json.loads(r["body"])):
            response.fail(r["messageId"])
    return response
