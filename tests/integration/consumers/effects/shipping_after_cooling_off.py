# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the order sent to the shipping queue only if the
put stored it, with DelaySeconds so shipping waits out the cancellation window.

The queue holds each request, hidden until its delay is over. Right verdict: pass, one
request per order (duplicate_effects 0, lost_effects 0), once the requests show.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")

COOLING_OFF_S = int(os.environ.get("COOLING_OFF_S", "300"))


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
        sqs.send_message(
            QueueUrl=os.environ["SHIPPING_QUEUE_URL"],
            MessageBody=json.dumps({"orderId": body["id"], "quantity": body["quantity"]}),
            DelaySeconds=COOLING_OFF_S,
        )
