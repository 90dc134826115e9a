"""explore on the lab: the race found and shrunk, replayed exactly; the guard covered."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import loadtest
from loadtest.cli import app
from loadtest.errors import InputError
from loadtest.reports.explore import explore_text

runner = CliRunner()

RACE = [
    ("1", "invocation starts", None),
    ("1", "GetItem id=dedup-order", "absent"),
    ("2", "invocation starts", None),
    ("2", "GetItem id=dedup-order", "absent"),
    ("2", "PutItem id=dedup-order", "accepted"),
    ("2", "acknowledged", None),
    ("1", "PutItem id=dedup-order", "accepted"),
    ("1", "acknowledged", None),
]


def _steps(report: loadtest.Report) -> list[tuple[str, str, str | None]]:
    example = report.to_dict()["explore"]["counterexample"]
    return [(s["delivery"], s["what"], s["answer"]) for s in example["steps"]]


def test_read_then_write_race_is_found_shrunk_and_replayed(
    backend_url: str, tmp_path: Path
) -> None:
    report = loadtest.explore(
        "seed-lab", variant="read-then-write", stop_at_first=True, endpoint_url=backend_url
    )
    assert report.exit_code == 1
    explore: dict[str, Any] = report.to_dict()["explore"]
    assert explore["strategy"] == "exhaustive" and explore["exhaustive"] is False
    assert explore["schedules_failed"] == 1
    assert explore["bound"]["stopped_by"] == "first_failure"
    assert explore["bound"]["exhaustive"] is False and explore["bound"]["pct"] is None
    example = explore["counterexample"]
    assert example["schedule"] == "2:2=2"
    assert example["deliveries"] == 2 and example["faults"] == 0
    assert example["counts"]["duplicate_writes"] == 1
    assert example["counts"]["writes_accepted"] == 2
    assert _steps(report) == RACE
    # The second write found the first one's item: the overwrite the observer saw.
    assert example["steps"][6]["item_before"] == example["steps"][4]["item_after"]
    assert explore["replay"] == (
        "loadtest explore seed-lab --variant read-then-write --schedule 2:2=2"
    )
    [bug] = explore["bugs"]
    assert bug["schedule"] == "2:2=2" and bug["steps"] == example["steps"]
    assert bug["schedules"] == 1 and bug["replay"] == explore["replay"]
    [run] = report.runs
    assert run.verdict == "fail" and run.counts.duplicate_writes == 1
    page = report.write_html(tmp_path / "explore.html").read_text(encoding="utf-8")
    assert "Explored schedules" in page and "--schedule 2:2=2" in page
    table = page[page.index('<table class="steps">') :]
    assert table[: table.index("</table>")].count("GetItem id=dedup-order") == 2
    # The explorer's clock measures nothing: no rates, latencies, costs or overlap by time.
    for timed in ('id="latency"', 'id="over-time"', 'id="race"', "messages/s", "overlapping_ids"):
        assert timed not in page, timed
    assert 'href="#explore"' in page and "env 1 · delivery 1</text>" in page
    from loadtest.reports.text.render import render

    assert "replay: loadtest explore" in str(render(report.to_dict()))

    # The replay line reruns exactly that interleaving, every time.
    for _ in range(3):
        again = loadtest.explore(
            "seed-lab", variant="read-then-write", schedule="2:2=2", endpoint_url=backend_url
        )
        assert again.exit_code == 1
        assert again.to_dict()["explore"]["strategy"] == "replay"
        assert again.to_dict()["explore"]["counterexample"]["schedule"] == "2:2=2"
        assert _steps(again) == RACE


def test_the_search_runs_on_after_the_first_failure_and_groups_the_race_into_one_bug(
    backend_url: str,
) -> None:
    report = loadtest.explore("seed-lab", variant="read-then-write", endpoint_url=backend_url)
    assert report.exit_code == 1
    explore: dict[str, Any] = report.to_dict()["explore"]
    # Every schedule of the three copies was run; most of them are the one race.
    assert explore["exhaustive"] is True and explore["stop_at_first"] is False
    bound = explore["bound"]
    assert bound["stopped_by"] == "space" and bound["schedules"] == explore["schedules_run"]
    assert 1 < explore["schedules_failed"] < explore["schedules_run"]
    [bug] = explore["bugs"]
    assert bug["schedules"] == explore["schedules_failed"]
    assert bug["schedule"] == explore["counterexample"]["schedule"] == "2:2=2"
    assert bug["counts"]["duplicate_writes"] == 1 and bug["faults"] == 0
    assert bug["departure"] == "another delivery going first after the delivery's read"
    assert _steps(report) == RACE
    text = explore_text(report.to_dict())
    assert f"covered: {bound['sentence']}" in text
    assert "bugs: 1 distinct, in " in text and "shrunk, the smallest of 1 bug(s):" in text


def test_default_schedule_of_the_race_passes(backend_url: str) -> None:
    report = loadtest.explore(
        "seed-lab", variant="read-then-write", schedule="2:", endpoint_url=backend_url
    )
    assert report.exit_code == 0
    assert report.runs[0].counts.writes_accepted == 1
    assert report.runs[0].counts.writes_rejected == 0  # the second read found the item


def test_conditional_covers_the_space(backend_url: str) -> None:
    report = loadtest.explore("seed-lab", variant="conditional", endpoint_url=backend_url)
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0
    # Three conditional puts on one item: their 3! orders, nothing else matters.
    assert explore["exhaustive"] is True and explore["schedules_run"] == 6
    assert explore["schedules_failed"] == 0 and explore["counterexample"] is None


def test_conditional_covers_the_space_with_faults(backend_url: str) -> None:
    report = loadtest.explore(
        "seed-lab",
        variant="conditional",
        faults="crash,redeliver,ack-lost",
        endpoint_url=backend_url,
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0
    assert explore["exhaustive"] is True and explore["schedules_failed"] == 0
    bound = explore["bound"]
    assert bound["stopped_by"] == "space" and bound["exhaustive"] is True
    assert bound["faults"] == {"crash": 1, "redeliver": 1, "ack-lost": 1}
    assert bound["sentence"].startswith("every schedule of 3 deliveries of dedup-order with")
    assert explore["schedules_run"] == 252
    assert explore["faults"] == ["crash", "redeliver", "ack-lost"] and explore["max_faults"] == 1


def test_a_time_budget_stops_the_search_with_an_answer(backend_url: str) -> None:
    started = time.perf_counter()
    report = loadtest.explore(
        "seed-lab",
        variant="conditional",
        faults="crash,redeliver,ack-lost",
        max_faults=2,
        time_budget_s=1.0,
        endpoint_url=backend_url,
    )
    assert time.perf_counter() - started < 15
    explore = report.to_dict()["explore"]
    assert report.exit_code == 0
    bound = explore["bound"]
    assert explore["exhaustive"] is False and bound["exhaustive"] is False
    assert bound["stopped_by"] == "time_budget" and bound["schedules"] >= 1
    assert "stopped by the time budget of 1 s" in bound["sentence"]


def test_pct_finds_the_race_and_states_its_bound(backend_url: str) -> None:
    report = loadtest.explore(
        "seed-lab",
        variant="read-then-write",
        strategy="pct",
        seed=3,
        stop_at_first=True,
        endpoint_url=backend_url,
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1
    bound = explore["bound"]
    assert bound["strategy"] == "pct" and bound["stopped_by"] == "first_failure"
    assert bound["pct"]["depth"] == 3 and bound["pct"]["probability"] > 0
    assert (
        "a bug of depth 3 is found with probability at least 1/(n*k^(d-1))" in (bound["sentence"])
    )
    assert explore["counterexample"]["deliveries"] == 2


def test_pct_runs_its_budget_past_a_failure(backend_url: str) -> None:
    report = loadtest.explore(
        "seed-lab",
        variant="read-then-write",
        strategy="pct",
        seed=3,
        budget=30,
        endpoint_url=backend_url,
    )
    explore = report.to_dict()["explore"]
    assert report.exit_code == 1
    bound = explore["bound"]
    assert bound["stopped_by"] == "budget" and explore["schedules_run"] == 30
    assert explore["schedules_failed"] >= 1
    assert sum(b["schedules"] for b in explore["bugs"]) == explore["schedules_failed"]
    assert explore["counterexample"] == {
        k: v for k, v in explore["bugs"][0].items() if k in explore["counterexample"]
    }


def test_bad_input() -> None:
    with pytest.raises(InputError, match="--target aws is not allowed"):
        loadtest.explore("seed-lab", target="aws")
    with pytest.raises(InputError, match="not both"):
        loadtest.explore("seed-lab", variant="conditional", handler="x.py:handler")
    with pytest.raises(InputError, match="strategy 'dfs' is not known"):
        loadtest.explore("seed-lab", strategy="dfs")
    result = runner.invoke(app, ["explore", "seed-lab", "--target", "aws"])
    assert result.exit_code == 2 and "not allowed" in result.output
    result = runner.invoke(app, ["explore", "seed-lab", "--faults", "boom"])
    assert result.exit_code == 2 and "allowed: crash" in result.output
    for seconds in ("0", "-1"):
        result = runner.invoke(app, ["explore", "seed-lab", "--time-budget", seconds])
        assert result.exit_code == 2, result.output
        assert "--time-budget" in result.output and "more than 0" in result.output
        assert "Traceback" not in result.output
    result = runner.invoke(app, ["explore", "seed-lab", "--schedule", "nope"])
    assert result.exit_code == 2 and "schedule 'nope' is not valid" in result.output


def test_cli_prints_the_counterexample_and_its_replay_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "loadtest",
            "explore",
            "seed-lab",
            "--variant",
            "read-then-write",
            "--json",
            str(tmp_path / "explore.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert "GetItem id=dedup-order -> absent" in done.stdout
    assert (
        "replay: loadtest explore seed-lab --variant read-then-write --schedule 2:2=2"
        in done.stdout
    )
    assert (tmp_path / "explore.json").exists()


def _cli_explore(args: list[str], json_path: Path, backend_url: str) -> dict[str, Any]:
    import json

    result = runner.invoke(
        app, [*args, "--endpoint-url", backend_url, "--json", str(json_path), "--quiet"]
    )
    assert result.exit_code == 1, result.output
    explore: dict[str, Any] = json.loads(json_path.read_text(encoding="utf-8"))["explore"]
    return explore


def test_printed_replay_line_reproduces_the_counterexample_with_every_option(
    backend_url: str, tmp_path: Path
) -> None:
    import shlex

    # Options that each change what is explored: the copies, a faults set with a bound of
    # two per schedule (the token indexes the options they make), a pct seed of its own.
    found = _cli_explore(
        [
            "explore",
            "seed-lab",
            "--variant",
            "read-then-write",
            "--copies",
            "2",
            "--faults",
            "redeliver,ack-lost",
            "--max-faults",
            "2",
            "--strategy",
            "pct",
            "--seed",
            "11",
            "--stop-at-first",
        ],
        tmp_path / "found.json",
        backend_url,
    )
    example = found["counterexample"]
    replay = shlex.split(found["replay"])
    assert replay[:2] == ["loadtest", "explore"]
    for option in ("--copies", "--faults", "--max-faults", "--seed", "--schedule"):
        assert option in replay, found["replay"]
    assert replay[replay.index("--schedule") + 1] == example["schedule"]
    # A replay does not search.
    assert "--strategy" not in replay and "--stop-at-first" not in replay
    for attempt in range(2):
        again = _cli_explore(replay[1:], tmp_path / f"replay{attempt}.json", backend_url)
        assert again["strategy"] == "replay" and again["replay"] == found["replay"]
        assert again["counterexample"]["steps"] == example["steps"]
        assert again["counterexample"]["counts"] == example["counts"]
