"""The embedded backend counts the requests it serves (the benchmark's requests/s)."""

from __future__ import annotations

import json
import urllib.request

from tests.integration.helpers import client


def _stats(url: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{url}/_loadtest/stats", timeout=5) as response:
        counts: dict[str, int] = json.load(response)
    return counts


def test_request_counter_counts_by_service(backend_url: str) -> None:
    before = _stats(backend_url)
    client("dynamodb", backend_url).list_tables()
    client("sqs", backend_url).list_queues()
    client("sqs", backend_url).list_queues()
    after = _stats(backend_url)
    assert after["dynamodb"] - before["dynamodb"] == 1
    assert after["sqs"] - before["sqs"] == 2
    assert after["requests"] - before["requests"] == 3
