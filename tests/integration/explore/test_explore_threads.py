"""explore on consumers that make their DynamoDB calls from threads of their own (a thread
pool awaited in the handler, a thread left running after it returns): no point stops such
a call, so no schedule covers where it falls, and explore says so instead of passing."""

from __future__ import annotations

import json

import pytest

import loadtest

CONSUMERS = "tests/integration/explore/consumers"


@pytest.mark.parametrize("consumer", ["pool_conditional_put", "thread_after_return"])
def test_a_write_from_a_thread_of_the_handlers_own_is_never_a_pass(
    backend_url: str, consumer: str
) -> None:
    report = loadtest.explore(
        "seed-lab",
        handler=f"{CONSUMERS}/{consumer}.py:handler",
        copies=2,
        endpoint_url=backend_url,
    )
    data = report.to_dict()
    explore = data["explore"]
    assert report.exit_code == 4, explore["bound"]["sentence"]
    assert explore["exhaustive"] is False
    assert explore["bound"]["stopped_by"] == "unscheduled_call"
    assert "PutItem call(s) not understood: made outside the delivery's thread" in json.dumps(data)
