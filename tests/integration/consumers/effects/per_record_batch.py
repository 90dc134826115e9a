# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Batch consumer on Powertools' BatchProcessor (partial batch responses): each record stores
its order (conditional put), publishes OrderPlaced if the put stored it, then reserves
stock. Reserving stock for an order marked "flaky" fails at its first receive: the record is
reported in batchItemFailures and comes back alone.

Copies in one batch are records of their own: the first stores and publishes, the copy is
skipped; the flaky record's redelivery finds its order stored and publishes nothing. Right
verdict: pass, one event per order. With PUBLISH_FIRST set each record publishes before its
put: fail, duplicate_effects = every record's delivery beyond the first of its order
(the copies, and the flaky record's second receive).
"""

import json
import os

import boto3
from aws_lambda_powertools.utilities.batch import (
    BatchProcessor,
    EventType,
    process_partial_response,
)
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")
processor = BatchProcessor(event_type=EventType.SQS)
PUBLISH_FIRST = bool(os.environ.get("PUBLISH_FIRST"))


def publish(body):
    sns.publish(
        TopicArn=os.environ["ORDERS_TOPIC_ARN"],
        Message=json.dumps({"type": "OrderPlaced", "id": body["id"], "quantity": body["quantity"]}),
    )


def reserve_stock(body, receive_count):
    if body.get("flaky") and receive_count == 1:
        raise RuntimeError(f"stock service timed out for {body['id']}")


def record_handler(record):
    body = record.json_body
    if PUBLISH_FIRST:
        publish(body)
    try:
        ddb.put_item(
            TableName=os.environ["TABLE_NAME"],
            Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
            ConditionExpression="attribute_not_exists(id)",
        )
    except ClientError as e:
        if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return
        raise
    if not PUBLISH_FIRST:
        publish(body)
    reserve_stock(body, int(record.attributes.approximate_receive_count))


def handler(event, context):
    return process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
