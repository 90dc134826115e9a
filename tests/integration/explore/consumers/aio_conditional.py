# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3: the lab's conditional put, from a sync handler."""

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
            item = {
                "id": {"S": body["id"]},
                "quantity": {"N": str(body["quantity"])},
                "total_cents": {"N": str(body["quantity"] * 250 + 100)},
            }
            try:
                await ddb.put_item(
                    TableName=TABLE,
                    Item=item,
                    ConditionExpression="attribute_not_exists(id)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as e:
                if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                    raise
                if e.response.get("Item") != item:
                    raise ValueError("different details")


def handler(event, context):
    asyncio.run(process(event["Records"]))
