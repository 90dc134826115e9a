# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: remembers the messageIds it applied in a string set on the order itself."""

import json
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
                    ":s": {"SS": [record["messageId"]]},
                    ":mid": {"S": record["messageId"]},
                },
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # already applied this message
