# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 that reads the order and its customer at once with
asyncio.gather, then puts the order if it was absent: two calls of one invocation in
flight together, and a read-then-write race between copies."""

import asyncio
import json
import os

import aioboto3

session = aioboto3.Session()
TABLE = os.environ["TABLE_NAME"]


async def process(records):
    async with session.client("dynamodb") as ddb:
        for record in records:
            body = json.loads(record["body"])
            order, customer = await asyncio.gather(
                ddb.get_item(TableName=TABLE, Key={"id": {"S": body["id"]}}, ConsistentRead=True),
                ddb.get_item(TableName=TABLE, Key={"id": {"S": "customer#default"}}),
            )
            if "Item" in order:
                continue
            await ddb.put_item(
                TableName=TABLE,
                Item={
                    "id": {"S": body["id"]},
                    "quantity": {"N": str(body["quantity"])},
                    "total_cents": {"N": str(body["quantity"] * 250 + 100)},
                },
            )


def handler(event, context):
    asyncio.run(process(event["Records"]))
