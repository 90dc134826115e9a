# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then OrderPlaced on SNS from a timer, so that the
handler returns at once ("fire and forget": the announcement waits ANNOUNCE_AFTER_S
seconds, for a cancellation that never comes in this sample).

Lambda freezes the timer's thread with the execution environment when the handler
returns: it runs on only while the environment is invoked again, and is gone when the
environment is retired. Every order's event hangs on later traffic. Right verdict: never
a pass; with the topic declared required, fail with lost_effects = every order whose timer
never fired.
"""

import json
import os
import threading

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")
DELAY = float(os.environ.get("ANNOUNCE_AFTER_S", "5"))


def announce(order):
    sns.publish(
        TopicArn=os.environ["ORDERS_TOPIC_ARN"],
        Message=json.dumps(order),
        MessageAttributes={"event": {"DataType": "String", "StringValue": "OrderPlaced"}},
    )


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        order = {"id": body["id"], "quantity": body["quantity"]}
        item = {"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}}
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
            continue
        threading.Timer(DELAY, announce, args=(order,)).start()
