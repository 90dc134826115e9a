# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 that retries a throttled put with an exponential backoff of
``await asyncio.sleep``: the lab's conditional put, three tries."""

import asyncio
import json
import os

import aioboto3
from botocore.exceptions import ClientError

session = aioboto3.Session()
TABLE = os.environ["TABLE_NAME"]


async def process(records):
    async with session.client("dynamodb") as ddb:
        for record in records:
            body = json.loads(record["body"])
            for attempt in range(3):
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
                    break
                except ClientError as e:
                    if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                        break
                    await asyncio.sleep(0.05 * 2**attempt)


def handler(event, context):
    asyncio.run(process(event["Records"]))
