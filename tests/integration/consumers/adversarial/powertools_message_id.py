# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with Powertools idempotency as in its SQS example: keyed on the record's
messageId, the idempotency records kept in the orders table itself (key attribute "id")."""

import json
import os

import boto3
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

TABLE = os.environ["TABLE_NAME"]
ddb = boto3.client("dynamodb")
persistence = DynamoDBPersistenceLayer(table_name=TABLE, key_attr="id")
config = IdempotencyConfig(event_key_jmespath="messageId")


@idempotent_function(data_keyword_argument="record", persistence_store=persistence, config=config)
def process(record):
    body = json.loads(record["body"])
    ddb.put_item(
        TableName=TABLE,
        Item={
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        },
    )
    return {"id": body["id"]}


def handler(event, context):
    config.register_lambda_context(context)
    return [process(record=record) for record in event["Records"]]
