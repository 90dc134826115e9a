# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer configured by resource *names*, as many templates do: it looks up its
topic's ARN with an idempotent CreateTopic and its audit queue's URL with GetQueueUrl at
import. It sends an audit message for every delivery before the guarded put (every copy
audited again) and publishes OrderPlaced only after the put succeeded.

Right verdict: fail, the audit queue holds copies - 1 duplicates per order; the topic one
event per order.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")
sqs = boto3.client("sqs")
TOPIC_ARN = sns.create_topic(Name=os.environ["ORDERS_TOPIC_NAME"])["TopicArn"]
AUDIT_URL = sqs.get_queue_url(QueueName=os.environ["AUDIT_QUEUE_NAME"])["QueueUrl"]


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        sqs.send_message(QueueUrl=AUDIT_URL, MessageBody=json.dumps({"seen": order["id"]}))
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
        sns.publish(
            TopicArn=TOPIC_ARN, Message=json.dumps({"type": "OrderPlaced", "id": order["id"]})
        )
