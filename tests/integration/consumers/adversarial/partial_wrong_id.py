# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with partial batch responses that names failed records by the order id
(not the messageId). Conditional put."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    failures = []
    for record in event["Records"]:
        try:
            body = json.loads(record["body"])
            if not isinstance(body["quantity"], int) or not 1 <= body["quantity"] <= 10:
                raise ValueError(f"invalid quantity in {body}")
            item = {
                "id": {"S": body["id"]},
                "quantity": {"N": str(int(body["quantity"]))},
                "total_cents": {"N": str(int(body["quantity"]) * 250 + 100)},
            }
            try:
                ddb.put_item(
                    TableName=TABLE, Item=item, ConditionExpression="attribute_not_exists(id)"
                )
            except ClientError as e:
                if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
        except Exception:
            try:
                failures.append({"itemIdentifier": json.loads(record["body"])["id"]})
            except Exception:
                failures.append({"itemIdentifier": "unknown"})
    return {"batchItemFailures": failures}
