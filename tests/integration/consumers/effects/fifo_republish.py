# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then the order sent to the shipping FIFO queue on every delivery.

The send carries MessageDeduplicationId = the order id, so the queue drops every copy
within its five-minute window; sending on duplicates too means a crash between the put
and the send is repaired by the redelivery. Right verdict: pass, one message per order
in the queue however many times it was sent (duplicate_effects 0, lost_effects 0).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


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
        sqs.send_message(
            QueueUrl=os.environ["SHIPPING_QUEUE_URL"],
            MessageBody=json.dumps(
                {"id": body["id"], "quantity": body["quantity"], "total_cents": total}
            ),
            MessageGroupId=body["id"],
            MessageDeduplicationId=body["id"],
        )
