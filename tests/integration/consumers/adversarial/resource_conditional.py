# ruff: noqa
# mypy: ignore-errors
# A user-written consumer, kept in its authors' style on purpose (not loadtest's).
"""Orders consumer (resource API): conditional put, identical duplicates acked."""

import json
import os
from decimal import Decimal

import boto3
from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

dynamodb = boto3.resource("dynamodb")
table = dynamodb.Table(os.environ["TABLE_NAME"])


def _to_item(order):
    qty = int(order["quantity"])
    return {"id": order["id"], "quantity": Decimal(qty), "total_cents": Decimal(qty * 250 + 100)}


def handler(event, context):
    results = []
    for record in event["Records"]:
        order = json.loads(record["body"])
        item = _to_item(order)
        try:
            table.put_item(
                Item=item,
                ConditionExpression=Attr("id").not_exists(),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
            results.append({"id": order["id"], "processed": True})
        except ClientError as e:
            if e.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise
            old = e.response.get("Item") or {}
            # the low-level response comes back typed even through the resource
            old_plain = {k: list(v.values())[0] for k, v in old.items()}
            if (
                old_plain.get("id") != item["id"]
                or Decimal(old_plain.get("quantity", "-1")) != item["quantity"]
                or Decimal(old_plain.get("total_cents", "-1")) != item["total_cents"]
            ):
                raise RuntimeError(f"order {order['id']} already exists with other details")
            results.append({"id": order["id"], "duplicate": True})
    return {"results": results}
