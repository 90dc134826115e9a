# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on boto3's resource API: the order stored with Table.put_item (conditional),
then, only if the put stored it, OrderPlaced published with Topic.publish, the shipping
request sent with Queue.send_message and the receipt written with Object.put.

Right verdict: pass, one entry per order on each of the three sinks (duplicate_effects 0,
lost_effects 0); with PUBLISH_FIRST set the three effects go out before the put, on every
copy: fail, duplicate_effects = (copies - 1) per order on the topic and on the queue (the
receipt's key is the order id: one object per order however often it is written).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

dynamodb = boto3.resource("dynamodb")
table = dynamodb.Table(os.environ["TABLE_NAME"])
topic = boto3.resource("sns").Topic(os.environ["ORDERS_TOPIC_ARN"])
shipping = boto3.resource("sqs").Queue(os.environ["SHIPPING_QUEUE_URL"])
receipts = boto3.resource("s3").Bucket(os.environ["RECEIPTS_BUCKET"])

PUBLISH_FIRST = bool(os.environ.get("PUBLISH_FIRST"))


def announce(order):
    topic.publish(Message=json.dumps({"type": "OrderPlaced", **order}))
    shipping.send_message(
        MessageBody=json.dumps({"orderId": order["id"], "qty": order["quantity"]})
    )
    receipts.Object(f"receipts/{order['id']}.json").put(
        Body=json.dumps(order).encode(), ContentType="application/json"
    )


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        order = {
            "id": body["id"],
            "quantity": body["quantity"],
            "total_cents": body["quantity"] * 250 + 100,
        }
        if PUBLISH_FIRST:
            announce(order)
        try:
            table.put_item(Item=order, ConditionExpression="attribute_not_exists(id)")
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
        if not PUBLISH_FIRST:
            announce(order)
