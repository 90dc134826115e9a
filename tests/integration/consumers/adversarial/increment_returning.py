# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: ADD to the running total and log the new total (ReturnValues=UPDATED_NEW)."""

import json
import os

import boto3

ddb = boto3.client("dynamodb")


def handler(event, context):
    totals = []
    for record in event["Records"]:
        body = json.loads(record["body"])
        resp = ddb.update_item(
            TableName=os.environ["TABLE_NAME"],
            Key={"id": {"S": body["id"]}},
            UpdateExpression="SET quantity = :q ADD total_cents :t",
            ExpressionAttributeValues={
                ":q": {"N": str(body["quantity"])},
                ":t": {"N": str(body["quantity"] * 250 + 100)},
            },
            ReturnValues="UPDATED_NEW",
        )
        totals.append({"id": body["id"], "attributes": resp.get("Attributes")})
    return {"totals": totals}
