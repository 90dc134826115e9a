"""The FIFO event source mapping: batches of a group in order, one batch per group in flight.

``fifo_runs`` on hand-made receives, then a run on the embedded backend where a receive of
ten holds several messages of each of two groups and four environments wait for them
(the same run without the FIFO rules in the dispatcher overlaps and reorders a group).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from typing import Any

from loadtest.emulation.mapping.dispatcher import fifo_runs
from loadtest.model.history.log import SentMessage
from loadtest.model.scenario.loading import parse_scenario
from loadtest.model.workload.schedule import plan
from tests.integration.helpers import run_variants


def _message(message_id: str, group: str) -> dict[str, Any]:
    return {"MessageId": message_id, "Attributes": {"MessageGroupId": group}}


def _ids(runs: list[list[list[dict[str, Any]]]]) -> list[list[list[str]]]:
    return [[[m["MessageId"] for m in batch] for batch in run] for run in runs]


def test_fifo_batches_sharing_a_group_form_one_ordered_run() -> None:
    received = [_message("a1", "A"), _message("a2", "A"), _message("b1", "B"), _message("a3", "A")]
    assert _ids(fifo_runs(received, 1)) == [[["a1"], ["a2"], ["a3"]], [["b1"]]]
    assert _ids(fifo_runs(received, 2)) == [[["a1", "a2"], ["b1", "a3"]]]
    assert _ids(fifo_runs(received, 10)) == [[["a1", "a2", "b1", "a3"]]]


def test_fifo_a_batch_bridging_two_runs_merges_them_in_order() -> None:
    received = [_message("a1", "A"), _message("b1", "B"), _message("a2", "A"), _message("b2", "B")]
    # batch_size 1: two independent runs; batch_size 3: [a1,b1,a2] then [b2] joins via B.
    assert _ids(fifo_runs(received, 1)) == [[["a1"], ["a2"]], [["b1"], ["b2"]]]
    assert _ids(fifo_runs(received, 3)) == [[["a1", "b1", "a2"], ["b2"]]]
    received = [_message("a1", "A"), _message("b1", "B"), _message("c1", "C"), _message("x", "A")]
    received[3]["Attributes"]["MessageGroupId"] = "B"
    assert _ids(fifo_runs(received, 1)) == [[["a1"]], [["b1"], ["x"]], [["c1"]]]


def test_fifo_groups_are_delivered_in_send_order_one_invocation_at_a_time(
    backend_url: str,
) -> None:
    scenario = parse_scenario(
        {
            "variants": ["conditional"],
            "workload": {
                "distinct_ids": 24,
                "copies": 1,
                "message_group": "fixed",
                "message_groups": 2,
                # Sent one by one, so the queue's order is the schedule's; faster than the
                # groups drain, so a receive holds several messages of each group.
                "arrival": "rate",
                "rate_per_s": 40,
            },
            "consumer": {"fifo": True, "concurrency": 4, "batch_size": 1},
            "faults": {"handler_duration_ms": 100},
        },
        source="test",
    )
    (run,) = run_variants(scenario, backend_url).runs
    planned = {p.index: p for p in plan(scenario.workload, scenario.seed)}
    sent = {m.message_id: m for m in run.history.sent}
    by_group: dict[str, list[tuple[int, int, SentMessage]]] = defaultdict(list)
    for inv in run.history.invocations:
        (record,) = inv.records
        message = sent[record.message_id]
        by_group[planned[message.index].group_id].append((inv.started_ns, inv.ended_ns, message))
    assert len(by_group) == 2
    ordered_pairs = 0
    for spans in by_group.values():
        spans.sort(key=lambda span: span[0])
        # Never two invocations of a group at once ...
        assert all(b[0] >= a[1] for a, b in itertools.pairwise(spans))
        # ... and in the queue's order: a message whose send was answered before another's
        # was due is ahead of it in the queue, so its invocation comes first.
        for (_, _, first), (_, _, second) in itertools.combinations(spans, 2):
            assert not second.sent_ns < first.intended_ns, (first.index, second.index)
            ordered_pairs += first.sent_ns < second.intended_ns
    assert ordered_pairs > 50  # the order was constrained, not vacuous
    assert run.check.counts.deliveries == 24
