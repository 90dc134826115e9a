# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer returning a partial batch response (the ESM was never set to ReportBatchItemFailures).

The first attempt of every odd-numbered order fails (a throttled downstream); the team
expected those records to come back.
"""

import json
import os

import boto3

ddb = boto3.client("dynamodb")


def handler(event, context):
    failures = []
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            if (
                int(body["id"].rsplit("-", 1)[1]) % 2 == 1
                and record["attributes"]["ApproximateReceiveCount"] == "1"
            ):
                raise ConnectionError("downstream throttled")
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={
                    "id": {"S": body["id"]},
                    "quantity": {"N": str(body["quantity"])},
                    "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                },
                ConditionExpression="attribute_not_exists(id)",
            )
        except ConnectionError:
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}
