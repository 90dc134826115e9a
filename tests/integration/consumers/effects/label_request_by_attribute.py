# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then a label request sent to the shipping queue only
if the put stored the order. The body is the label template; the order it is for is in
the message attributes (OrderId, and Ref = "ORDER#<id>").

Right verdict: pass, one label request per order (duplicate_effects 0, lost_effects 0).
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
            MessageBody=json.dumps({"template": "standard-label", "copies": 1}),
            MessageAttributes={
                "OrderId": {"DataType": "String", "StringValue": body["id"]},
                "Ref": {"DataType": "String", "StringValue": "ORDER#" + body["id"]},
            },
        )
