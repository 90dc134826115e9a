# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: publishes OrderPlaced to a FIFO topic, then stores the order with a
conditional put. The publish's MessageDeduplicationId is DEDUP_BY: "message" (the SQS
messageId, the default) or "order" (the order id).

The topic drops a publish whose deduplication id it saw in the last five minutes. Keyed by
the messageId it drops only a redelivery of the same message: a producer's resend is a new
message with a new id and is announced again. Right verdict: fail, duplicate_effects =
copies - 1 per order. Keyed by the order id every copy is dropped: pass, one event per
order although every copy published (effects_sent = copies per order).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")
DEDUP_BY = os.environ.get("DEDUP_BY", "message")


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        dedup_id = record["messageId"] if DEDUP_BY == "message" else body["id"]
        sns.publish(
            TopicArn=os.environ["ORDERS_TOPIC_ARN"],
            Message=json.dumps(
                {"type": "OrderPlaced", "id": body["id"], "quantity": body["quantity"]}
            ),
            MessageGroupId=body["id"],
            MessageDeduplicationId=dedup_id,
        )
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
