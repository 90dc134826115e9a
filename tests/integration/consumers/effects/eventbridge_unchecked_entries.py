# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then two events in one PutEvents call, OrderPlaced and
ShipmentRequested, only if the put stored the order.

ShipmentRequested's Detail is built by string formatting, so an order whose note holds a
quote makes it invalid JSON: EventBridge refuses that entry alone (MalformedDetail) and
accepts the other. The answer's FailedEntryCount is never read, so the message is
acknowledged. Right verdict: fail, lost_effects = the messages of the orders with such a
note (their shipment request never reached the bus).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
events = boto3.client("events")


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
                continue  # already placed
            raise
        bus = os.environ["ORDER_EVENTS_BUS"]
        events.put_events(
            Entries=[
                {
                    "EventBusName": bus,
                    "Source": "shop.orders",
                    "DetailType": "OrderPlaced",
                    "Detail": json.dumps(
                        {"order": {"orderId": body["id"], "qty": body["quantity"]}}
                    ),
                },
                {
                    "EventBusName": bus,
                    "Source": "shop.orders",
                    "DetailType": "ShipmentRequested",
                    "Detail": '{"orderId": "%s", "note": "%s"}' % (body["id"], body["note"]),
                },
            ]
        )
