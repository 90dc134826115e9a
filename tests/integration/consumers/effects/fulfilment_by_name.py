# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the fulfilment workflow started with the order id
as the execution's name, on every delivery.

Step Functions keeps one execution per name: a copy starting it again is answered with
the running execution, or refused (ExecutionAlreadyExists) once it has finished, which
this consumer takes as done. A crash before the start is repaired by the redelivery.
Right verdict: pass, one execution per order (duplicate_effects 0, lost_effects 0).
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
        total = body["quantity"] * 250 + 100
        item = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(total)},
        }
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item=item,
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            if e.response.get("Item") != item:
                raise ValueError("different details")
        try:
            sfn.start_execution(
                stateMachineArn=os.environ["FULFILMENT_STATE_MACHINE_ARN"],
                name=body["id"],
                input=json.dumps(
                    {"id": body["id"], "quantity": body["quantity"], "total_cents": total},
                    sort_keys=True,
                ),
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ExecutionAlreadyExists":
                raise
