# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 for reads, boto3 in the loop's default executor for the write."""

import asyncio
import json
import os

import aioboto3
import boto3

session = aioboto3.Session()
TABLE = os.environ["TABLE_NAME"]
sync_ddb = boto3.client("dynamodb")


async def process(records):
    loop = asyncio.get_running_loop()
    async with session.client("dynamodb") as ddb:
        for record in records:
            body = json.loads(record["body"])
            found = await ddb.get_item(TableName=TABLE, Key={"id": {"S": body["id"]}})
            if "Item" in found:
                continue
            item = {
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            }
            await loop.run_in_executor(None, lambda: sync_ddb.put_item(TableName=TABLE, Item=item))


def handler(event, context):
    asyncio.run(process(event["Records"]))
