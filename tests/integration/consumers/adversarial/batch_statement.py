# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer for batches: one BatchExecuteStatement of INSERTs; a DuplicateItem answer means done."""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]


def handler(event, context):
    statements = []
    for record in event["Records"]:
        body = json.loads(record["body"])
        statements.append(
            {
                "Statement": f"INSERT INTO \"{TABLE}\" VALUE {{'id': ?, 'quantity': ?, 'total_cents': ?}}",
                "Parameters": [
                    {"S": body["id"]},
                    {"N": str(body["quantity"])},
                    {"N": str(body["quantity"] * 250 + 100)},
                ],
            }
        )
    answers = ddb.batch_execute_statement(Statements=statements)["Responses"]
    for answer in answers:
        error = answer.get("Error")
        if error and error["Code"] != "DuplicateItem":
            raise RuntimeError(error)
