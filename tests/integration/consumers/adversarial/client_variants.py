# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer with the clients a codebase accumulates: a botocore session's client, a
fresh boto3 Session per invocation, a resource's meta.client, a tuned Config. Conditional put."""

import json
import os

import boto3
import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError

TABLE = os.environ["TABLE_NAME"]
raw = botocore.session.get_session().create_client("dynamodb")
tuned = boto3.client(
    "dynamodb",
    config=Config(retries={"mode": "adaptive", "max_attempts": 5}, parameter_validation=False),
)
table = boto3.resource("dynamodb").Table(TABLE)
meta = table.meta.client  # the resource's client: takes and returns plain Python values


def handler(event, context):
    fresh = boto3.session.Session().client("dynamodb")
    clients = [raw, tuned, meta, fresh]
    for n, record in enumerate(event["Records"]):
        body = json.loads(record["body"])
        ddb = clients[(int(record["attributes"]["SentTimestamp"]) + n) % len(clients)]
        item = {
            "id": {"S": body["id"]},
            "quantity": {"N": str(body["quantity"])},
            "total_cents": {"N": str(body["quantity"] * 250 + 100)},
        }
        plain = {
            "id": body["id"],
            "quantity": body["quantity"],
            "total_cents": body["quantity"] * 250 + 100,
        }
        try:
            ddb.put_item(
                TableName=TABLE,
                Item=plain if ddb is meta else item,
                ConditionExpression="attribute_not_exists(id)",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            # an error's Item comes back typed, even through the resource's client
            if e.response.get("Item") != item:
                raise ValueError(f"order {body['id']} already stored with other details")
