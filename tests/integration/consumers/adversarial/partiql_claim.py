# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer in PartiQL: INSERT a PENDING claim, then UPDATE ... WHERE id = ? AND status = 'PENDING'."""

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
                Statement=f"INSERT INTO \"{TABLE}\" VALUE {{'id': ?, 'status': 'PENDING'}}",
                Parameters=[{"S": body["id"]}],
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "DuplicateItemException":
                raise
            found = ddb.execute_statement(
                Statement=f'SELECT status FROM "{TABLE}" WHERE id = ?',
                Parameters=[{"S": body["id"]}],
            )["Items"]
            if found and found[0]["status"]["S"] == "COMPLETED":
                continue
            raise RuntimeError("in progress, retry later")
        ddb.execute_statement(
            Statement=f"UPDATE \"{TABLE}\" SET status = 'COMPLETED' SET quantity = ? SET total_cents = ? WHERE id = ? AND status = 'PENDING'",
            Parameters=[
                {"N": str(body["quantity"])},
                {"N": str(body["quantity"] * 250 + 100)},
                {"S": body["id"]},
            ],
        )
