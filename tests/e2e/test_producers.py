"""--producers N: child processes split the schedule; every count is the same as with one."""

from __future__ import annotations

from loadtest.model.scenario import load_scenario
from loadtest.reports.report import build_report
from tests.e2e.helpers import run_variants


def test_two_producer_processes_send_and_judge_the_same_workload(backend_url: str) -> None:
    base = load_scenario("race-burst").with_overrides(distinct_ids=30)
    one = build_report(run_variants(base, backend_url, "conditional"))["runs"][0]
    two_scenario = base.with_overrides(producers=2)
    two = build_report(run_variants(two_scenario, backend_url, "conditional"))["runs"][0]

    assert two["counts"] == one["counts"]
    assert two["counts"]["messages_sent"] == 120
    assert two["counts"]["acked"] == 120
    assert two["verdict"] == "pass"


def test_after_completion_resends_stay_in_the_harness_with_two_producers(
    backend_url: str,
) -> None:
    scenario = load_scenario("resends-after-completion").with_overrides(producers=2)
    run = build_report(run_variants(scenario, backend_url, "conditional"))["runs"][0]

    assert run["counts"]["messages_sent"] == run["counts"]["acked"] + run["counts"]["dead_lettered"]
    assert run["counts"]["send_failures"] == 0
    assert run["counts"]["duplicate_writes"] == 0
