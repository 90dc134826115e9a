# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with a deduplication table, in two separate writes: the order's marker
(put if absent), then the order. A delivery whose marker is refused takes the order for
processed, so a crash between the two writes loses the order:

    delivery A                           its redelivery (after the visibility timeout)
    PutItem marker (if absent) ─► ok
    ✗ crash
                                         PutItem marker ─► refused: skipped, acknowledged
"""

import json
import os

import boto3

ddb = boto3.client("dynamodb")
TABLE = os.environ["TABLE_NAME"]
DEDUP_TABLE = os.environ["DEDUP_TABLE_NAME"]


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=DEDUP_TABLE,
                Item={"pk": {"S": f"order#{body['id']}"}},
                ConditionExpression="attribute_not_exists(pk)",
            )
        except ddb.exceptions.ConditionalCheckFailedException:
            print(f"order {body['id']} already processed")
            continue
        ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
        )
