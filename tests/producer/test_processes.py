"""--producers N: child processes split the schedule; every count is the same as with one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.report import build_report
from tests.integration.helpers import run_variants


def test_two_producer_processes_send_and_judge_the_same_workload(backend_url: str) -> None:
    base = load_scenario("race-burst").with_overrides(distinct_ids=30)
    one = build_report(run_variants(base, backend_url, "conditional"))["runs"][0]
    two_scenario = base.with_overrides(producers=2)
    two = build_report(run_variants(two_scenario, backend_url, "conditional"))["runs"][0]

    # Everything but the race exposure, which is timing (which copies happened to overlap).
    timing = ("overlapping_ids", "overlapping_deliveries")

    def measured(run: dict[str, Any]) -> dict[str, int]:
        return {k: v for k, v in run["counts"].items() if k not in timing}

    assert measured(two) == measured(one)
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


def test_max_backlog_stops_producer_processes_and_everything_sent_is_judged(
    backend_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "rate.json"
    scenario = tmp_path / "too-fast.toml"
    scenario.write_text(
        'name = "too-fast"\nvariants = ["conditional"]\n'
        '[workload]\ndistinct_ids = 20000\narrival = "rate"\nrate_per_s = 5000\n'
    )
    result = CliRunner().invoke(
        app,
        [
            "run",
            str(scenario),
            "--endpoint-url",
            backend_url,
            "--concurrency",
            "1",
            "--max-backlog",
            "50",
            "--producers",
            "2",
            "--json",
            str(out),
        ],
    )
    assert result.exit_code == 4, result.output
    (run,) = json.loads(out.read_text())["runs"]
    assert "over max_backlog (50)" in run["rate"]["stopped_early"]
    counts = run["counts"]
    assert 50 < counts["messages_sent"] < 20000
    assert counts["acked"] == counts["messages_sent"]  # every message the backend took was judged
