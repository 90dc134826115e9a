# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 run with asyncio.run per invocation: the conditional put is
awaited, the OrderPlaced announcement is a task it does not await ("fire and forget",
kept in a set so it is not garbage-collected), after a pause of ANNOUNCE_AFTER_S seconds.

asyncio.run cancels every task still pending when the handler's coroutine returns: the
announcement never goes out. Right verdict: never a pass; with the topic declared
required, fail with lost_effects = every order.
"""

import asyncio
import json
import os

import aioboto3

session = aioboto3.Session()
background = set()
DELAY = float(os.environ.get("ANNOUNCE_AFTER_S", "0"))


async def announce(order):
    await asyncio.sleep(DELAY)
    async with session.client("sns") as sns:
        await sns.publish(TopicArn=os.environ["ORDERS_TOPIC_ARN"], Message=json.dumps(order))


async def process(event):
    async with session.client("dynamodb") as ddb:
        for record in event["Records"]:
            body = json.loads(record["body"])
            item = {"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}}
            try:
                await ddb.put_item(
                    TableName=os.environ["TABLE_NAME"],
                    Item=item,
                    ConditionExpression="attribute_not_exists(id)",
                )
            except ddb.exceptions.ConditionalCheckFailedException:
                continue
            task = asyncio.create_task(announce({"id": body["id"], "quantity": body["quantity"]}))
            background.add(task)
            task.add_done_callback(background.discard)


def handler(event, context):
    asyncio.run(process(event))
