# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: claim the order item itself (status PENDING and the quantity, conditional),
then complete it with the total (an update).

A delivery that finds the order item, PENDING or DONE, skips it and is acked. An order
whose first delivery died between the claim and the completion stays PENDING for good.
"""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        key = {"id": {"S": body["id"]}}
        if ddb.get_item(TableName=TABLE, Key=key, ConsistentRead=True).get("Item"):
            continue  # PENDING or DONE: someone has it
        ddb.put_item(
            TableName=TABLE,
            Item={**key, "status": {"S": "PENDING"}, "quantity": {"N": str(body["quantity"])}},
            ConditionExpression="attribute_not_exists(id)",
        )
        ddb.update_item(
            TableName=TABLE,
            Key=key,
            UpdateExpression="SET #s = :done, total_cents = :t",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={
                ":done": {"S": "DONE"},
                ":t": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
