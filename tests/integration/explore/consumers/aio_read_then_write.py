# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 (the team's shared async data layer), run from a sync handler: get, then put if new."""

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
            found = await ddb.get_item(TableName=TABLE, Key={"id": {"S": body["id"]}})
            if "Item" in found:
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
