# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 that writes the order (put if absent) and an audit row of
its message at once with asyncio.gather: two writes of one invocation in flight together."""

import asyncio
import json
import os

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
                ddb.put_item(
                    TableName=TABLE,
                    Item={"id": {"S": f"audit#{record['messageId']}"}, "order": {"S": body["id"]}},
                ),
            )


def handler(event, context):
    asyncio.run(process(event["Records"]))
