# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 that puts the order (if absent) and stamps it as received
at once with asyncio.gather: two writes of one invocation to one item in flight together,
which DynamoDB may apply in either order."""

import asyncio
import json
import os
import time

import aioboto3
from botocore.exceptions import ClientError

session = aioboto3.Session()
TABLE = os.environ["TABLE_NAME"]


async def put_order(ddb, body):
    try:
        await ddb.put_item(
            TableName=TABLE,
            Item={
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            },
            ConditionExpression="attribute_not_exists(id)",
        )
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise


async def process(records):
    async with session.client("dynamodb") as ddb:
        for record in records:
            body = json.loads(record["body"])
            await asyncio.gather(
                put_order(ddb, body),
                ddb.update_item(
                    TableName=TABLE,
                    Key={"id": {"S": body["id"]}},
                    UpdateExpression="SET received_at = :now",
                    ExpressionAttributeValues={":now": {"N": str(int(time.time()))}},
                ),
            )


def handler(event, context):
    asyncio.run(process(event["Records"]))
