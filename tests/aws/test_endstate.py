"""Reading a run's end state on the real embedded backend: every item, in pages."""

from __future__ import annotations

from typing import Any

import anyio

from loadtest.aws import clients as aws
from loadtest.aws import endstate
from tests.backend import aws_clients


def test_scan_items_reads_a_table_larger_than_a_page(backend_url: str) -> None:
    count = endstate.SCAN_PAGE_ITEMS * 2 + 17
    with aws_clients.table(backend_url) as table:
        client = aws_clients.dynamodb(backend_url)
        for first in range(0, count, 25):
            client.batch_write_item(
                RequestItems={
                    table: [
                        {"PutRequest": {"Item": {"id": {"S": f"k{i}"}, "n": {"N": str(i)}}}}
                        for i in range(first, min(first + 25, count))
                    ]
                }
            )

        async def scan() -> dict[str, dict[str, Any]]:
            target = aws.Target.resolve(aws.BackendKind.EMBEDDED, backend_url)
            async with aws.clients(target) as (_, dynamodb):
                return await endstate.scan_items(dynamodb, table)

        items = anyio.run(scan, backend="asyncio")
    assert len(items) == count
    assert {item["n"]["N"] for item in items.values()} == {str(i) for i in range(count)}
