# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: writes the receipt (receipts/<order id>.json) first, then stores the order
with a conditional put; when the put finds the order already stored, it "cleans up the
duplicate's receipt" by deleting receipts/<order id>.json.

That key is the first delivery's receipt too: every order sent twice ends with no receipt
at all, though both of its messages were acknowledged. Right verdict: fail, lost_effects =
the acknowledged messages of every order whose copy came (the orders sent once keep theirs).
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
s3 = boto3.client("s3")


def handler(event, context):
    bucket = os.environ["RECEIPTS_BUCKET"]
    for record in event["Records"]:
        body = json.loads(record["body"])
        key = f"receipts/{body['id']}.json"
        s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(body).encode())
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            s3.delete_object(Bucket=bucket, Key=key)
