# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer on aioboto3: the conditional put and the OrderPlaced publish through
aioboto3's clients, run with asyncio.run from the synchronous handler.

By default it publishes only when the put stored the order (copies are acknowledged
without a publish): right verdict pass, one event per order, and a crash between the put
and the publish loses the event (explore: lost_effects 1). With PUBLISH_FIRST set it
publishes before the put, on every copy: fail, duplicate_effects = copies - 1 per order.
"""

import asyncio
import json
import os

import aioboto3
from botocore.exceptions import ClientError

session = aioboto3.Session()
TABLE = os.environ["TABLE_NAME"]
TOPIC = os.environ["ORDERS_TOPIC_ARN"]
PUBLISH_FIRST = bool(os.environ.get("PUBLISH_FIRST"))


async def process(records):
    async with session.client("dynamodb") as ddb, session.client("sns") as sns:
        for record in records:
            body = json.loads(record["body"])
            event = {
                "type": "OrderPlaced",
                "id": body["id"],
                "quantity": body["quantity"],
            }
            if PUBLISH_FIRST:
                await sns.publish(TopicArn=TOPIC, Message=json.dumps(event))
            try:
                await ddb.put_item(
                    TableName=TABLE,
                    Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
                    ConditionExpression="attribute_not_exists(id)",
                )
            except ClientError as e:
                if e.response["Error"]["Code"] == "ConditionalCheckFailedException":
                    continue
                raise
            if not PUBLISH_FIRST:
                await sns.publish(TopicArn=TOPIC, Message=json.dumps(event))


def handler(event, context):
    asyncio.run(process(event["Records"]))
