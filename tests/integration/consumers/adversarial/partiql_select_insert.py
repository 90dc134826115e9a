# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer in PartiQL: SELECT the order; INSERT it if absent (a lost race raises and is retried)."""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        found = ddb.execute_statement(
            Statement=f'SELECT * FROM "{TABLE}" WHERE id = ?', Parameters=[{"S": body["id"]}]
        )["Items"]
        if found:
            if found[0]["quantity"]["N"] != str(body["quantity"]):
                raise ValueError("order exists with another quantity")
            continue
        ddb.execute_statement(
            Statement=f"INSERT INTO \"{TABLE}\" VALUE {{'id': ?, 'quantity': ?, 'total_cents': ?}}",
            Parameters=[
                {"S": body["id"]},
                {"N": str(body["quantity"])},
                {"N": str(body["quantity"] * 250 + 100)},
            ],
        )
