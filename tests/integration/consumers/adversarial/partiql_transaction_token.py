# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: PartiQL transaction (order + outbox) made idempotent by its ClientRequestToken.

The token is a digest of the body: a resend within 10 minutes is answered as the first call
was, and writes nothing (DynamoDB's own idempotency for ExecuteTransaction).
"""

import hashlib
import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        token = hashlib.sha256(record["body"].encode()).hexdigest()[:36]
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
                    "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'id': ?, 'event': ?}}",
                    "Parameters": [{"S": f"outbox#{body['id']}"}, {"S": "OrderPlaced"}],
                },
            ],
            ClientRequestToken=token,
        )
