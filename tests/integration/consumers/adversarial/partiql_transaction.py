# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: the order and its outbox event as one PartiQL transaction (ExecuteTransaction of two INSERTs)."""

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
            ddb.execute_transaction(
                TransactStatements=[
                    {
                        "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'id': ?, 'quantity': ?, 'total_cents': ?}}",
                        "Parameters": [
                            {"S": body["id"]},
                            {"N": str(body["quantity"])},
                            {"N": str(body["quantity"] * 250 + 100)},
                        ],
                    },
                    {
                        "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'id': ?, 'type': 'OrderCreated'}}",
                        "Parameters": [{"S": "outbox#" + body["id"]}],
                    },
                ]
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            codes = [r.get("Code") for r in e.response.get("CancellationReasons", [])]
            if "DuplicateItem" not in codes:
                raise
