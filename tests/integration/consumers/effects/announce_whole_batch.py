# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Batch consumer with partial batch responses: each record stored (conditional put), the
records that failed reported in batchItemFailures, and the whole batch announced at the
end in one PublishBatch, the failed records included.

A record that failed comes back alone and is announced again. Right verdict: fail,
duplicate_effects = one per failed record's extra receive.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
sns = boto3.client("sns")


def handler(event, context):
    failures, entries = [], []
    for record in event["Records"]:
        body = json.loads(record["body"])
        try:
            if body.get("flaky") and record["attributes"]["ApproximateReceiveCount"] == "1":
                raise ConnectionError("inventory service timed out")
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                failures.append({"itemIdentifier": record["messageId"]})
        except Exception:
            failures.append({"itemIdentifier": record["messageId"]})
        entries.append(
            {
                "Id": str(len(entries)),
                "Message": json.dumps({"orderId": body["id"], "quantity": body["quantity"]}),
            }
        )
    sns.publish_batch(TopicArn=os.environ["ORDERS_TOPIC_ARN"], PublishBatchRequestEntries=entries)
    return {"batchItemFailures": failures}
