# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: get_item, and if the order is absent put_item and announce it on SNS.

The lab's check-then-act race, with an event behind it: copies that read "absent" at
the same time all write and all publish. Right verdict: fail, duplicate_writes > 0 and
duplicate_effects = duplicate_writes (one OrderPlaced per accepted write).
"""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")


def handler(event, context):
    table = os.environ["TABLE_NAME"]
    for record in event["Records"]:
        body = json.loads(record["body"])
        total = body["quantity"] * 250 + 100
        found = ddb.get_item(TableName=table, Key={"id": {"S": body["id"]}}, ConsistentRead=True)
        if "Item" in found:
            continue
        ddb.put_item(
            TableName=table,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(total)},
            },
        )
        sns.publish(
            TopicArn=os.environ["ORDERS_TOPIC_ARN"],
            Message=json.dumps(
                {
                    "type": "OrderPlaced",
                    "id": body["id"],
                    "quantity": body["quantity"],
                    "total_cents": total,
                }
            ),
        )
