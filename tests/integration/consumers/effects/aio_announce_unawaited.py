# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3 with one event loop kept for the environment's life: the
conditional put is awaited, the OrderPlaced announcement is a task the handler does not
await ("fire and forget", kept in a set so it is not garbage-collected), after a pause
of ANNOUNCE_AFTER_S seconds.

The task runs only while the loop runs, that is during a later invocation of the same
environment, and never once the environment is retired. Right verdict: never a pass;
with the topic declared required, fail with lost_effects = every order whose task never
published.
"""

import asyncio
import json
import os

import aioboto3

loop = asyncio.new_event_loop()
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
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ddb.exceptions.ConditionalCheckFailedException:
                continue
            task = asyncio.ensure_future(announce({"id": body["id"], "quantity": body["quantity"]}))
            background.add(task)
            task.add_done_callback(background.discard)


def handler(event, context):
    loop.run_until_complete(process(event))
