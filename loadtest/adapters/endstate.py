"""Reading a run's end state: queue depths and every item of a table.

Owns the reads the engine makes once a run has finished (or is salvaged); used through
``loadtest.adapters.aws``, which re-exports them. Reads only: creates and deletes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from loadtest.model.history import key_string

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


async def scan_items(
    dynamodb: DynamoDBClient, table: str, key_names: tuple[str, ...] = ("id",)
) -> dict[str, dict[str, Any]]:
    """Every item of a table by its key string (``history.key_string``; consistent read, all pages)."""
    items: dict[str, dict[str, Any]] = {}
    kwargs: dict[str, Any] = {"TableName": table, "ConsistentRead": True}
    while True:
        page = await dynamodb.scan(**kwargs)
        for item in page.get("Items", []):
            key = {n: item[n] for n in key_names if n in item}
            if key:
                items[key_string(key)] = dict(item)
        if "LastEvaluatedKey" not in page:
            return items
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
