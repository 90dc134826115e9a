# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then an audit line sent to the audit queue for every
delivery: which SQS message was handled and how, but not which order.

Nothing in the audit line names the order, so whose effect each line is cannot be told.
Right verdict: inconclusive (exit 4), naming the audit sink and what to declare; the
table itself is right.
"""

import json
import os
import time

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        outcome = "stored"
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            outcome = "duplicate"
        sqs.send_message(
            QueueUrl=os.environ["AUDIT_QUEUE_URL"],
            MessageBody=json.dumps(
                {"message": record["messageId"], "outcome": outcome, "at": int(time.time())}
            ),
        )
