"""Powertools for AWS Lambda idempotency, keyed on the business id.

The order itself is written with a plain, unconditional ``PutItem``: the only
guard is Powertools' idempotency record in its own table
(``IDEMPOTENCY_TABLE_NAME``, partition key ``id``), taken before the write and
completed after it. Needs the optional extra ``aws-lambda-powertools``.

The race and what the lock costs::

    delivery A                                  delivery B (same business id)
    PutItem idem record INPROGRESS
      if absent or expired ─► taken
    PutItem order (unconditional) ...           PutItem idem record INPROGRESS ─► ConditionalCheckFailed
                                                  old status INPROGRESS ─► IdempotencyAlreadyInProgressError
                                                  invocation fails; the message stays in the queue
    UpdateItem idem record COMPLETED + result
                                                ── visibility timeout ──
                                                delivery B again (a redelivery)
                                                PutItem idem record ─► ConditionalCheckFailed
                                                  old status COMPLETED ─► stored result replayed, acked

No second write of the order, but every copy that arrives while the first is
in flight costs a failed invocation and a redelivery after the visibility
timeout. The lock expires with the invocation's remaining time (hence
``register_lambda_context``), so a crashed first delivery does not block its
copies for the record's whole hour.

Details are validated as well (``payload_validation_jmespath="quantity"``): a
copy of a completed id with another quantity raises
``IdempotencyValidationError``, so it is retried and dead-lettered like the
lab's conflict, never acknowledged.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord

from consumer._orders import dynamodb, handle, order_item, result, table_name


def _replayed(response: Any, idempotent_data: DataRecord) -> Any:
    """A completed duplicate: the stored result comes back, reported as the lab's duplicate."""
    if not isinstance(response, dict):
        return response
    return result(str(response["id"]), int(response["quantity"]), duplicate=True)


_config = IdempotencyConfig(
    event_key_jmespath="id",
    payload_validation_jmespath="quantity",
    raise_on_no_idempotency_key=True,
    response_hook=_replayed,
)
# One client per execution environment, passed in: boto3 takes AWS_ENDPOINT_URL
# and the region from the function's environment.
_persistence = DynamoDBPersistenceLayer(
    table_name=os.environ["IDEMPOTENCY_TABLE_NAME"], boto3_client=dynamodb()
)


def _store_order(*, job: dict[str, Any]) -> dict[str, Any]:
    order_id, quantity = str(job["id"]), int(job["quantity"])
    # Deliberately unconditional: the idempotency record is the guard under test.
    dynamodb().put_item(TableName=table_name(), Item=order_item(order_id, quantity))
    return result(order_id, quantity, duplicate=False)


# idempotent_function is typed as returning Any; keep the wrapped signature for callers.
store_order: Callable[..., dict[str, Any]] = idempotent_function(
    _store_order,
    data_keyword_argument="job",
    persistence_store=_persistence,
    config=_config,
)


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    _config.register_lambda_context(context)
    return handle(
        event, lambda order_id, quantity: store_order(job={"id": order_id, "quantity": quantity})
    )
