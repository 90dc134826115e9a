# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3's resource layer: the lab's conditional put, comparing the old item."""

import asyncio
import json
import os

import aioboto3
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

session = aioboto3.Session()
TABLE = os.environ["TABLE_NAME"]


async def process(records):
    async with session.resource("dynamodb") as ddb:
        table = await ddb.Table(TABLE)
        for record in records:
            body = json.loads(record["body"])
            item = {
                "id": body["id"],
                "quantity": body["quantity"],
                "total_cents": body["quantity"] * 250 + 100,
            }
            try:
                await table.put_item(
                    Item=item,
                    ConditionExpression="attribute_not_exists(id)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as e:
                if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                old = {
                    k: TypeDeserializer().deserialize(v)
                    for k, v in e.response.get("Item", {}).items()
                }
                if old != item:
                    raise ValueError("different details")


def handler(event, context):
    asyncio.run(process(event["Records"]))
