# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3's resource layer, run from a sync handler: Table.get_item, then put_item if new."""

import asyncio
import json
import os

import aioboto3

session = aioboto3.Session()
TABLE = os.environ["TABLE_NAME"]


async def process(records):
    async with session.resource("dynamodb") as ddb:
        table = await ddb.Table(TABLE)
        for record in records:
            body = json.loads(record["body"])
            found = await table.get_item(Key={"id": body["id"]})
            if "Item" in found:
                continue
            await table.put_item(
                Item={
                    "id": body["id"],
                    "quantity": body["quantity"],
                    "total_cents": body["quantity"] * 250 + 100,
                }
            )


def handler(event, context):
    asyncio.run(process(event["Records"]))
