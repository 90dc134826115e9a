# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer addressing its table by ARN (the platform team's data layer passes ARNs everywhere): get, then put if new."""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE_ARN = ddb.describe_table(TableName=os.environ["TABLE_NAME"])["Table"]["TableArn"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        if "Item" in ddb.get_item(TableName=TABLE_ARN, Key={"id": {"S": body["id"]}}):
            continue
        ddb.put_item(
            TableName=TABLE_ARN,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
