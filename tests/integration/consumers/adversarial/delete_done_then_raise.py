# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Batch consumer written the way AWS advised before partial batch responses existed:
delete the records that succeeded yourself, then raise so that only the failed ones come
back. Right verdict: pass (each good order stored once and deleted by the handler, the
poison record dead-lettered, nothing left waiting).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sqs = boto3.client("sqs")
QUEUE_URL = os.environ["QUEUE_URL"]


def handler(event, context):
    done, failed = [], []
    for record in event["Records"]:
        try:
            order = json.loads(record["body"])
            if order["quantity"] <= 0:
                raise ValueError(f"order {order['id']}: quantity must be positive")
            try:
                ddb.put_item(
                    TableName=os.environ["TABLE_NAME"],
                    Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
                    ConditionExpression="attribute_not_exists(id)",
                )
            except ClientError as e:
                if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
            done.append(record)
        except Exception as e:
            print(f"failed {record['messageId']}: {e}")
            failed.append(record)
    if failed:
        if done:
            sqs.delete_message_batch(
                QueueUrl=QUEUE_URL,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(done)
                ],
            )
        raise RuntimeError(f"{len(failed)} of {len(event['Records'])} records failed")
