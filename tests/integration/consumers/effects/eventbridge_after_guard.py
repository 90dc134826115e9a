# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then an OrderPlaced event on the order-events bus
(PutEvents) only if the put stored the order.

The dual write again, on EventBridge: copies are acknowledged without an event, and a
crash between the put and PutEvents loses the event for good. Right verdict: pass
without faults; under crashes mid-handler, fail with lost_effects = the orders whose
storing delivery died before PutEvents.
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
            continue
        answer = events.put_events(
            Entries=[
                {
                    "EventBusName": os.environ["ORDER_EVENTS_BUS"],
                    "Source": "orders",
                    "DetailType": "OrderPlaced",
                    "Detail": json.dumps(
                        {"id": body["id"], "quantity": body["quantity"], "total_cents": total}
                    ),
                }
            ]
        )
        if answer["FailedEntryCount"]:
            raise RuntimeError(f"PutEvents failed: {answer['Entries']}")
