# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3's resource layer with one event loop kept for the container:
Table.get_item, then put_item if new."""

import asyncio
import json
import os

import aioboto3

loop = asyncio.new_event_loop()
session = aioboto3.Session()


async def process(records):
    async with session.resource("dynamodb") as dynamo:
        table = await dynamo.Table(os.environ["TABLE_NAME"])
        for record in records:
            job = json.loads(record["body"])
            existing = await table.get_item(Key={"id": job["id"]})
            if existing.get("Item"):
                continue
            await table.put_item(
                Item={
                    "id": job["id"],
                    "quantity": job["quantity"],
                    "total_cents": job["quantity"] * 250 + 100,
                }
            )


def handler(event, context):
    loop.run_until_complete(process(event["Records"]))
