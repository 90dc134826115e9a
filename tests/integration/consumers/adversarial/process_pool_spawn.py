# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer: the write runs in a spawned worker process (ProcessPoolExecutor, spawn), conditional put."""

import json
import os
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import boto3
from botocore.exceptions import ClientError

TABLE = os.environ["TABLE_NAME"]


def save(body):
    ddb = boto3.client("dynamodb")
    item = {
        "id": {"S": body["id"]},
        "quantity": {"N": str(body["quantity"])},
        "total_cents": {"N": str(body["quantity"] * 250 + 100)},
    }
    try:
        ddb.put_item(
            TableName=TABLE,
            Item=item,
            ConditionExpression="attribute_not_exists(id)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    except ClientError as e:
        if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
            raise
        if e.response.get("Item") != item:
            raise ValueError(f"order {body['id']} already stored with other details")


def handler(event, context):
    with ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        for record in event["Records"]:
            pool.submit(save, json.loads(record["body"])).result()
