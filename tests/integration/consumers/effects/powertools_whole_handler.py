# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer (batch size 1) with Powertools idempotency around the whole handler: the
order's put (unconditional) and its OrderPlaced publish both run inside @idempotent, keyed
on the record's body.

A copy replays the stored result without running the handler: nothing is written or
published again. Right verdict: pass, one write and one event per order.
"""

import json
import os

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent,
)

persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"])
config = IdempotencyConfig(event_key_jmespath="Records[0].body")
ddb = boto3.client("dynamodb")
sns = boto3.client("sns")


@idempotent(config=config, persistence_store=persistence)
def handler(event, context):
    for record in event["Records"]:
        body = json.loads(record["body"])
        ddb.put_item(
            TableName=os.environ["TABLE_NAME"],
            Item={"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}},
        )
        sns.publish(
            TopicArn=os.environ["ORDERS_TOPIC_ARN"],
            Message=json.dumps(
                {"event": "OrderPlaced", "orderId": body["id"], "quantity": body["quantity"]}
            ),
        )
    return {"ok": True}
