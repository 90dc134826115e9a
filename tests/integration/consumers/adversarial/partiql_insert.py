# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer using PartiQL: INSERT fails on an existing key, which means already done."""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.execute_statement(
                Statement=f"INSERT INTO \"{TABLE}\" VALUE {{'id': ?, 'quantity': ?, 'total_cents': ?}}",
                Parameters=[
                    {"S": body["id"]},
                    {"N": str(body["quantity"])},
                    {"N": str(body["quantity"] * 250 + 100)},
                ],
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "DuplicateItemException":
                raise
