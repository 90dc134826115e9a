"""Reading a run's end state: queue depths and every item of a table.

Owns the reads the engine makes once a run has finished (or is salvaged); used through
``loadtest.aws.clients``, which re-exports them. Reads only: creates and deletes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import anyio

from loadtest.model.history.log import key_string

if TYPE_CHECKING:
    from types_aiobotocore_dynamodb.client import DynamoDBClient
    from types_aiobotocore_sqs.client import SQSClient


async def queue_depth(sqs: SQSClient, url: str) -> tuple[int, int]:
    """(visible, in flight) for a queue."""
    attrs = await sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )
    values = attrs["Attributes"]
    return int(values["ApproximateNumberOfMessages"]), int(
        values["ApproximateNumberOfMessagesNotVisible"]
    )


SCAN_PAGE_ITEMS = 1000
"""Items asked for per Scan page. DynamoDB caps a page at 1 MB, moto does not: one page of
a 33,334-item table raised the embedded backend's peak RSS by 44 MB while it built the
answer (3 MB with pages of 1,000), more than the table itself."""


async def scan_items(
    dynamodb: DynamoDBClient,
    table: str,
    key_names: tuple[str, ...] = ("id",),
    page_timeout_s: float | None = None,
    errors: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> dict[str, dict[str, Any]]:
    """Every item of a table by its key string (``history.key_string``; consistent read, all pages).

    ``page_timeout_s`` bounds each page, not the whole scan: a large table takes
    as many pages as it needs (raises ``TimeoutError`` when one does not come).
    ``errors`` wraps each request inside that bound (``aws.translated``, which
    would take the bound's ``TimeoutError`` for an unreachable endpoint).
    """
    items: dict[str, dict[str, Any]] = {}
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True, "Limit": SCAN_PAGE_ITEMS}
    while True:
        with anyio.fail_after(page_timeout_s), errors():
            page = await dynamodb.scan(**kwargs)
        for item in page.get("Items", []):
            key = {n: item[n] for n in key_names if n in item}
            if key:
                items[key_string(key)] = dict(item)
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


async def count_items(
    dynamodb: DynamoDBClient,
    table: str,
    page_timeout_s: float | None = None,
    errors: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> int:
    """How many items a table holds (a counting scan, all pages)."""
    total = 0
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True, "Select": "COUNT"}
    while True:
        with anyio.fail_after(page_timeout_s), errors():
            page = await dynamodb.scan(**kwargs)
        total += int(page.get("Count", 0))
        if "LastEvaluatedKey" not in page:
            return total
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
