# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: each record of the batch stored and announced on a thread pool kept
for the environment's life, and the handler waits for every record's future before it
returns (a failed record is reported in batchItemFailures).

The pool's threads outlive the invocation, idle; the work handed to them does not. Each
announcement is made for its own record, on a thread the record was never read on. Right
verdict: pass, every order announced once.
"""

import json
import os
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")
pool = ThreadPoolExecutor(max_workers=4)


def process(body):
    item = {"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}}
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
        return
    sns.publish(TopicArn=os.environ["ORDERS_TOPIC_ARN"], Message=json.dumps(body))


def handler(event, context):
    futures = {
        record["messageId"]: pool.submit(process, json.loads(record["body"]))
        for record in event["Records"]
    }
    failures = []
    for message_id, future in futures.items():
        try:
            future.result()
        except Exception as e:
            print(f"record {message_id} failed: {e}")
            failures.append({"itemIdentifier": message_id})
    return {"batchItemFailures": failures}
