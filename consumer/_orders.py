"""What every built-in consumer shares: the lab's job validation and item shape.

Kept in one small module so the variants differ only in how they write. A
deployable zip of one variant includes this file too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import boto3

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.client import DynamoDBClient

UNIT_PRICE_CENTS = 250
HANDLING_CENTS = 100

_client: DynamoDBClient | None = None


def dynamodb() -> DynamoDBClient:
    """The function's DynamoDB client, created once per execution environment.

    boto3 resolves the endpoint (``AWS_ENDPOINT_URL``) and region
    (``AWS_REGION``/``AWS_DEFAULT_REGION``) from the environment itself.
    """
    global _client
    if _client is None:
        _client = boto3.client("dynamodb")
    return _client


def table_name() -> str:
    return os.environ["TABLE_NAME"]


def parse_single_job(event: dict[str, Any]) -> tuple[str, int]:
    """Validate the event exactly as the lab's handler does; return (id, quantity).

    One SQS record whose body is ``{"id": str, "quantity": int 1..10}`` with
    exactly those keys; a bool is not an integer. Anything else raises, so the
    message is retried and eventually dead-lettered.
    """
    if set(event) != {"Records"} or len(event["Records"]) != 1:
        raise ValueError("Expected one SQS record")
    return parse_job(event["Records"][0]["body"])


def parse_job(body: str) -> tuple[str, int]:
    """The lab's rules for one job body; return (id, quantity) or raise ValueError."""
    job = json.loads(body)
    if (
        not isinstance(job, dict)
        or set(job) != {"id", "quantity"}
        or not isinstance(job["id"], str)
    ):
        raise ValueError("Use an id and quantity")
    quantity = job["quantity"]
    if isinstance(quantity, bool) or not isinstance(quantity, int) or not 1 <= quantity <= 10:
        raise ValueError("Quantity must be an integer from 1 to 10")
    return job["id"], quantity


class BatchFailedError(RuntimeError):
    """Some records of a batch failed and partial batch responses are off: retry the batch."""


def reports_batch_item_failures() -> bool:
    """Whether the event source mapping has ReportBatchItemFailures on.

    A function cannot ask its mapping; like a deployed function, it is told
    through its configuration (``REPORT_BATCH_ITEM_FAILURES``, set by loadtest).
    """
    return os.environ.get("REPORT_BATCH_ITEM_FAILURES", "false").lower() == "true"


def handle(event: dict[str, Any], write: Callable[[str, int], dict[str, Any]]) -> dict[str, Any]:
    """Run ``write(id, quantity)`` for the event's records.

    One record: exactly the lab (its validation, its errors, its result). A
    batch: every record is tried; failed ones are named in a partial batch
    response when the mapping reports batch item failures, otherwise the whole
    batch fails and is retried — records that succeeded included, which is
    what makes batches a source of duplicates.
    """
    records = event.get("Records") if set(event) == {"Records"} else None
    if not isinstance(records, list) or len(records) <= 1:
        order_id, quantity = parse_single_job(event)
        return write(order_id, quantity)
    results: list[dict[str, Any]] = []
    failed: list[str] = []
    for record in records:
        try:
            results.append(write(*parse_job(record["body"])))
        except Exception as exc:
            print(f"FAILED {record['messageId']}: {type(exc).__name__}: {exc}")
            failed.append(record["messageId"])
    if failed and not reports_batch_item_failures():
        raise BatchFailedError(
            f"{len(failed)} of {len(records)} records failed; retrying the batch"
        )
    return {"results": results, "batchItemFailures": [{"itemIdentifier": m} for m in failed]}


def order_item(order_id: str, quantity: int) -> dict[str, Any]:
    """The stored order, in DynamoDB's typed form: total = quantity*250 + 100 cents."""
    return {
        "id": {"S": order_id},
        "quantity": {"N": str(quantity)},
        "total_cents": {"N": str(quantity * UNIT_PRICE_CENTS + HANDLING_CENTS)},
    }


def result(order_id: str, quantity: int, *, duplicate: bool) -> dict[str, Any]:
    """The lab's result shape; printed as a RESULT log line (no receipt handles)."""
    outcome = {
        "id": order_id,
        "quantity": quantity,
        "processed": not duplicate,
        "duplicate": duplicate,
    }
    print("RESULT " + json.dumps(outcome, sort_keys=True))
    return outcome
