"""Reading the end state: each request is bounded, not the whole scan.

A large table takes as many scan pages as it has (33,334 items are about 25 s
of pages on the embedded backend), so a run's end-state read bounds each
request; a salvage after an interrupt bounds the whole read.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from loadtest.aws import clients as aws
from loadtest.engine.ending import read_end_state, salvage_end_state
from loadtest.errors import BackendError

PAGE_S = 0.2
TIMEOUT_S = 0.5


class _Sqs:
    async def get_queue_attributes(self, **_: Any) -> dict[str, Any]:
        return {
            "Attributes": {
                "ApproximateNumberOfMessages": "0",
                "ApproximateNumberOfMessagesNotVisible": "0",
            }
        }


class _Dynamodb:
    """Four pages of one item each, every page answered after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    async def scan(self, **kwargs: Any) -> dict[str, Any]:
        await anyio.sleep(self.delay)
        page = int(kwargs.get("ExclusiveStartKey", {}).get("id", {}).get("S", "-1")) + 1
        out: dict[str, Any] = {"Items": [{"id": {"S": str(page)}}]}
        if page < 3:
            out["LastEvaluatedKey"] = {"id": {"S": str(page)}}
        return out


def _made() -> aws.Provisioned:
    return aws.Provisioned(queue_url="q", dlq_url="d", table_name="t")


TARGET = aws.Target(aws.BackendKind.ENDPOINT, "http://backend", "us-east-1")


def test_a_scan_longer_than_the_timeout_is_read_whole_when_each_page_answers() -> None:
    async def main() -> None:
        end = await read_end_state(_Sqs(), _Dynamodb(PAGE_S), _made(), TARGET, TIMEOUT_S)  # type: ignore[arg-type]
        assert sorted(end.table_items) == ["0", "1", "2", "3"]  # 0.8 s in all, 0.2 s a page

    anyio.run(main)


def test_a_page_that_does_not_answer_is_a_backend_error_naming_the_endpoint() -> None:
    async def main() -> None:
        with pytest.raises(BackendError, match=r"http://backend did not answer within 0\.5 s"):
            await read_end_state(_Sqs(), _Dynamodb(1.0), _made(), TARGET, TIMEOUT_S)  # type: ignore[arg-type]

    anyio.run(main)


def test_a_salvage_bounds_the_whole_read() -> None:
    async def main() -> None:
        salvaged = await salvage_end_state(_Sqs(), _Dynamodb(PAGE_S), _made(), TARGET, TIMEOUT_S)  # type: ignore[arg-type]
        assert salvaged is None

    anyio.run(main)
