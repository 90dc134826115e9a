# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the fulfilment workflow started on every delivery
with the SQS messageId as the execution's name (ExecutionAlreadyExists taken as done).

A redelivery of the same message finds its execution, but a producer's resend is a new
message with a new id: each copy starts another execution for the same order. Right
verdict: fail, duplicate_effects = copies - 1 per order.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sfn = boto3.client("stepfunctions")


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
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
        try:
            sfn.start_execution(
                stateMachineArn=os.environ["FULFILMENT_STATE_MACHINE_ARN"],
                name=record["messageId"],
                input=json.dumps({"orderId": body["id"], "quantity": body["quantity"]}),
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ExecutionAlreadyExists":
                raise
