# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then OrderPlaced published with MessageStructure="json":
one message per protocol, the order as JSON for queues ("sqs"), a line of text for
everyone else ("default"); both name the order.

Subscribers get only their protocol's message. Published only when the put stored the
order: right verdict pass, one event per order. With PUBLISH_FIRST set it publishes before
the put, on every copy: fail, duplicate_effects = copies - 1 per order.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")
PUBLISH_FIRST = bool(os.environ.get("PUBLISH_FIRST"))


def announce(body):
    sns.publish(
        TopicArn=os.environ["ORDERS_TOPIC_ARN"],
        MessageStructure="json",
        Message=json.dumps(
            {
                "default": f"Order {body['id']} placed: {body['quantity']} item(s)",
                "sqs": json.dumps(
                    {"type": "OrderPlaced", "id": body["id"], "quantity": body["quantity"]}
                ),
            }
        ),
    )


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        if PUBLISH_FIRST:
            announce(body)
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
        if not PUBLISH_FIRST:
            announce(body)
