# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the loyalty function invoked asynchronously
(InvocationType="Event") with the order, only if the put stored it.

The dual write once more, with Lambda as the second write: copies are acknowledged without
an invoke, so load runs pass (one invoke per order); a crash between the put and the invoke
loses the points for good (explore --faults crash: lost_effects 1).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
lam = boto3.client("lambda")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
        lam.invoke(
            FunctionName=os.environ["LOYALTY_FUNCTION"],
            InvocationType="Event",
            Payload=json.dumps({"orderId": body["id"], "points": body["quantity"] * 10}).encode(),
        )
