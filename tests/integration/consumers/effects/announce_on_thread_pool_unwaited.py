# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: conditional put, then OrderPlaced handed to a multiprocessing
ThreadPool kept for the environment's life, never waited for ("the handler should not pay
for the announcement"). The announcement batches for ANNOUNCE_AFTER_S seconds first.

The pool's threads are frozen with the execution environment when the handler returns:
the call runs on only while the environment is invoked again, and is gone when it is
retired. Right verdict: never a pass; with the topic declared required, fail with the
orders whose announcement never ran lost.
"""

import json
import os
import time
from multiprocessing.pool import ThreadPool

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")
pool = ThreadPool(processes=2)
DELAY = float(os.environ.get("ANNOUNCE_AFTER_S", "5"))


def announce(order):
    time.sleep(DELAY)
    sns.publish(TopicArn=os.environ["ORDERS_TOPIC_ARN"], Message=json.dumps(order))


def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        order = {"id": body["id"], "quantity": body["quantity"]}
        item = {"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}}
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item=item,
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            continue
        pool.apply_async(announce, (order,))
