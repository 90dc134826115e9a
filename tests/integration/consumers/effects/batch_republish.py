# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer for batches: each record stored (conditional put) and forwarded to the
shipping queue; one bad record raises, and the batch is retried whole.

No partial batch response: the records that succeeded are received again with the
one that failed and forwarded again each time. Right verdict: fail, each good record
of the batch forwarded once per receive (duplicate_effects = good records x (receives - 1));
its batch-mates end in the DLQ with the bad record (unexpected_dead_letters).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")


def handler(event, context):
    failed = 0
    for record in event["Records"]:
        try:
            body = json.loads(record["body"])
            if not 1 <= body["quantity"] <= 10:
                raise ValueError("bad quantity")
            total = body["quantity"] * 250 + 100
            item = {
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(total)},
            }
            try:
                ddb.put_item(
                    TableName=os.environ["TABLE_NAME"],
                    Item=item,
                    ConditionExpression="attribute_not_exists(id)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as e:
                if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                if e.response.get("Item") != item:
                    raise ValueError("different details")
            sqs.send_message(
                QueueUrl=os.environ["SHIPPING_QUEUE_URL"],
                MessageBody=json.dumps(
                    {"id": body["id"], "quantity": body["quantity"], "total_cents": total}
                ),
            )
        except Exception as e:
            print(f"record {record['messageId']} failed: {e}")
            failed += 1
    if failed:
        raise RuntimeError(f"{failed} records failed")
