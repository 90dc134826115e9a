# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then two events on one topic, OrderPlaced and (once
stock is reserved) StockReserved.

Two different events per order are this consumer's design, not duplicates. The stock
call between them times out on the first attempt for even-numbered orders: the
invocation fails after OrderPlaced went out, the redelivery finds the order stored and
acknowledges it, and StockReserved is never sent. Right verdict: without the timeouts,
pass (two events per order, none duplicated); with them, lost_effects = the
even-numbered orders.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")


def reserve_stock(order_id, attempt):
    if os.environ.get("STOCK_TIMES_OUT") == "1" and attempt == 1 and int(order_id[-1]) % 2 == 0:
        raise TimeoutError(f"stock service timed out reserving {order_id}")


def handler(event, context):
    topic = os.environ["ORDERS_TOPIC_ARN"]
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
                continue  # already placed
            raise
        sns.publish(TopicArn=topic, Message=json.dumps({"type": "OrderPlaced", "id": body["id"]}))
        reserve_stock(body["id"], int(record["attributes"]["ApproximateReceiveCount"]))
        sns.publish(TopicArn=topic, Message=json.dumps({"type": "StockReserved", "id": body["id"]}))
