# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer that stores the order with a conditional put, then puts an OrderPlaced
record on a Kinesis stream for analytics (creating the stream on first use, as its local
setup does). The table is right; what reached the stream no run reads back.

Right verdict: inconclusive, naming the Kinesis calls: never a pass on the table alone.
"""

import json
import os

import boto3
from botocore.exceptions import ClientError

ddb = boto3.client("dynamodb")
kinesis = boto3.client("kinesis")
STREAM = os.environ.get("ORDERS_STREAM", "order-events")
try:
    kinesis.create_stream(StreamName=STREAM, ShardCount=1)
except kinesis.exceptions.ResourceInUseException:
    pass


def handler(event, context):
    for record in event["Records"]:
        order = json.loads(record["body"])
        try:
            ddb.put_item(
                TableName=os.environ["TABLE_NAME"],
                Item={"id": {"S": order["id"]}, "quantity": {"N": str(order["quantity"])}},
                ConditionExpression="attribute_not_exists(id)",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                continue
            raise
        kinesis.put_record(
            StreamName=STREAM,
            PartitionKey=order["id"],
            Data=json.dumps({"type": "OrderPlaced", "id": order["id"]}).encode(),
        )
