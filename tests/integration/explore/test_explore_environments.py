"""explore runs each execution environment with its own copy of the consumer's modules, as
Lambda runs each in a process of its own: what a module holds (a set of ids seen, an event
loop) is one environment's, never another's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import loadtest

CONSUMERS = "tests/integration/explore/consumers"


def test_a_set_of_ids_kept_in_memory_does_not_deduplicate_across_environments(
    backend_url: str,
) -> None:
    report = loadtest.explore(
        "seed-lab", handler=f"{CONSUMERS}/dedup_in_memory.py:handler", endpoint_url=backend_url
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1, explore["bound"]["sentence"]
    [bug] = explore["bugs"]
    assert bug["counts"]["duplicate_writes"] == 1
    # Two copies, one after the other, each in an environment of its own.
    assert bug["schedule"] == "2:" and bug["faults"] == 0


def test_the_environment_that_replaces_a_crashed_one_starts_with_an_empty_set(
    backend_url: str,
) -> None:
    report = loadtest.explore(
        "seed-lab",
        handler=f"{CONSUMERS}/dedup_in_memory.py:handler",
        copies=1,
        faults="crash",
        endpoint_url=backend_url,
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1
    [bug] = explore["bugs"]
    assert bug["counts"]["duplicate_writes"] == 1 and bug["faults"] == 1


def test_a_later_exploration_in_the_process_imports_the_consumers_siblings_afresh(
    backend_url: str,
) -> None:
    # The handler imports a sibling that binds its table when imported. Each exploration
    # makes a table of its own: the second must find the sibling imported again under its
    # own variables, not the first's copy still bound to a table since dropped.
    options = {"copies": 1, "distinct_ids": 2, "endpoint_url": backend_url}
    orders = "tests/integration/explore/customer-orders.toml"
    handler = f"{CONSUMERS}/customer_versioned_overwrite.py:handler"
    first = loadtest.explore(orders, handler=handler, **options)  # type: ignore[arg-type]
    second = loadtest.explore(orders, handler=handler, **options)  # type: ignore[arg-type]
    assert first.exit_code == second.exit_code == 1, second.to_dict()["runs"][0]["reasons"]
    assert second.to_dict()["explore"]["bugs"] == first.to_dict()["explore"]["bugs"]


def test_a_failure_only_a_warm_environment_shows_says_its_token_does_not_replay_it(
    backend_url: str, tmp_path: Path
) -> None:
    # Each schedule's deliveries run in environments of their own, but an environment's
    # import is kept for later schedules of the same process: there the client the first
    # schedule kept is bound to an ended event loop. A bug is shown as its token replays
    # it, from cold environments; this one cannot be, and it says so. (In a process of its
    # own: the consumer leaves its aiohttp sessions open, as it would on Lambda.)
    handler = f"{CONSUMERS}/aio_client_kept.py:handler"
    command = [
        *(sys.executable, "-m", "loadtest", "explore", "seed-lab", "--handler", handler),
        *("--copies", "2", "--endpoint-url", backend_url, "--quiet"),
    ]
    out = tmp_path / "warm.json"
    found = subprocess.run(
        [*command, "--workers", "1", "--json", str(out)], capture_output=True, text=True
    )
    assert found.returncode == 1, found.stderr
    [bug] = json.loads(out.read_text(encoding="utf-8"))["explore"]["bugs"]
    assert bug["counts"]["unexpected_dead_letters"] >= 1
    assert any("failed only in an execution environment kept warm" in r for r in bug["reasons"])
    # From cold environments the schedule runs otherwise: its token names steps it lacks.
    again = subprocess.run(
        [*command, "--schedule", bug["schedule"]], capture_output=True, text=True
    )
    assert again.returncode == 2 and "does not match the steps" in again.stderr
