# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the fulfilment workflow started on every delivery
with a fresh execution name (Step Functions would pick one anyway).

Nothing ties an execution to its order: every copy starts another. Right verdict: fail,
duplicate_effects = copies - 1 per order.
"""

import json
import os
import uuid

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
        sfn.start_execution(
            stateMachineArn=os.environ["FULFILMENT_STATE_MACHINE_ARN"],
            name=f"fulfil-{uuid.uuid4()}",
            input=json.dumps({"orderId": body["id"], "quantity": body["quantity"]}),
        )
