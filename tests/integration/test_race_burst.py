"""race-burst: the racy consumer double-writes, the conditional guard never does."""

from __future__ import annotations

import dataclasses

from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.report import build_report
from tests.integration.helpers import loadtest_resources, run_variants


def test_race_burst_read_then_write_duplicates_conditional_never(backend_url: str) -> None:
    # The shipped scenario, smaller so the suite stays fast; same shape.
    scenario = load_scenario("race-burst").with_overrides(distinct_ids=40)
    result = run_variants(scenario, backend_url, "read-then-write", "conditional")
    racy, guarded = build_report(result)["runs"]

    assert racy["variant"] == "read-then-write"
    assert racy["counts"]["messages_sent"] == 160
    assert racy["counts"]["acked"] == 160
    assert racy["counts"]["duplicate_writes"] > 0
    assert racy["counts"]["writes_rejected"] == 0
    # A demonstration: the race is expected, so the verdict passes only because
    # the scenario relaxes it and a threshold confirms it reproduced.
    assert racy["verdict"] == "pass"
    assert racy["relaxed_reasons"] == [
        f"{racy['counts']['duplicate_writes']} duplicate write(s): an outcome was written again"
    ]
    assert racy["thresholds"] == [
        {
            "expr": "read-then-write: duplicate_writes > 0",
            "observed": racy["counts"]["duplicate_writes"],
            "ok": True,
        }
    ]
    assert racy["table_after"] == {"items": 40}  # the table alone looks correct
    finding = racy["findings"][0]
    assert finding["accepted_writes"] >= 2
    assert sum(1 for r in finding["reads"] if r["found"] is None) >= 2  # both saw "absent"

    assert guarded["variant"] == "conditional"
    assert guarded["counts"]["duplicate_writes"] == 0
    assert guarded["counts"]["writes_accepted"] == 40
    assert guarded["counts"]["writes_rejected"] == 120
    assert guarded["counts"]["lost_outcomes"] == 0
    assert guarded["verdict"] == "pass"
    assert guarded["queue_after"] == {"visible": 0, "in_flight": 0, "dlq": 0}
    # Copies of an id really ran at the same time: the pass says something.
    assert guarded["counts"]["overlapping_ids"] > 0
    assert guarded["counts"]["overlapping_deliveries"] >= guarded["counts"]["overlapping_ids"]
    assert racy["counts"]["overlapping_ids"] > 0
    assert loadtest_resources(backend_url) == ([], [])


def test_one_environment_cannot_race_so_the_guard_passing_proves_nothing(
    backend_url: str,
) -> None:
    scenario = load_scenario("race-burst").with_overrides(distinct_ids=10, concurrency=1)
    (run,) = build_report(run_variants(scenario, backend_url, "conditional"))["runs"]
    assert run["counts"]["messages_sent"] == 40
    assert run["counts"]["duplicate_writes"] == 0
    assert run["counts"]["overlapping_ids"] == 0
    assert run["counts"]["overlapping_deliveries"] == 0
    assert run["reasons"] == []
    assert run["verdict"] == "inconclusive"
    (reason,) = run["inconclusive"]
    assert reason.startswith(
        "no two deliveries of one business id were processed at the same time "
        "(10 id(s) sent more than once, 40 deliveries, none overlapping another of its id): "
        "this run could not have shown a race between deliveries"
    )


def test_a_scenario_of_sequential_resends_passes_without_overlap(backend_url: str) -> None:
    scenario = load_scenario("race-burst").with_overrides(distinct_ids=5, concurrency=1)
    sequential = dataclasses.replace(scenario, expect_overlap=False)
    (run,) = build_report(run_variants(sequential, backend_url, "conditional"))["runs"]
    assert run["counts"]["overlapping_ids"] == 0
    assert run["inconclusive"] == []
    assert run["verdict"] == "pass"
