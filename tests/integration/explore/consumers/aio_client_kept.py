# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 that opens its client on the first invocation and keeps it in
a module global for the container's later ones ("clients are expensive"), each invocation
run with asyncio.run: the lab's conditional put. A warm invocation finds the client bound
to the event loop of the first one, which asyncio.run has closed, and fails."""

import asyncio
import json
import os

import aioboto3
from botocore.exceptions import ClientError

session = aioboto3.Session()
TABLE = os.environ["TABLE_NAME"]
_ddb = None


async def dynamodb():
    global _ddb
    if _ddb is None:
        _ddb = await session.client("dynamodb").__aenter__()
    return _ddb


async def process(records):
    ddb = await dynamodb()
    for record in records:
        body = json.loads(record["body"])
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


def handler(event, context):
    asyncio.run(process(event["Records"]))
