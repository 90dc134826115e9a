"""Powertools idempotency around an order write that is itself conditional.

Powertools' in-progress record expires with the invocation's remaining time, so a
delivery that died after writing the order leaves the record to expire, and a later
receive runs the function again: here the write refuses a second order instead of
storing it again.
"""

from __future__ import annotations

import os
from typing import Any

from _jobs import dynamodb, job, order_item, table  # type: ignore[import-not-found]
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)

_config = IdempotencyConfig(event_key_jmespath="id", raise_on_no_idempotency_key=True)
_persistence = DynamoDBPersistenceLayer(
    table_name=os.environ["IDEMPOTENCY_TABLE_NAME"], boto3_client=dynamodb()
)


@idempotent_function(data_keyword_argument="order", persistence_store=_persistence, config=_config)  # type: ignore[untyped-decorator]
def store_order(*, order: dict[str, Any]) -> dict[str, Any]:
    try:
        dynamodb().put_item(
            TableName=table(),
            Item=order_item(str(order["id"]), int(order["quantity"])),
            ConditionExpression="attribute_not_exists(id)",
        )
    except dynamodb().exceptions.ConditionalCheckFailedException:
        return {"id": order["id"], "duplicate": True}
    return {"id": order["id"], "duplicate": False}


def handler(event: dict[str, Any], context: Any) -> Any:
    _config.register_lambda_context(context)
    order_id, quantity, _ = job(event)
    return store_order(order={"id": order_id, "quantity": quantity})
