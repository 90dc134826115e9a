"""explore past the first failure: every distinct bug, each shrunk and replayed by its token."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import loadtest
from loadtest.cli import app

CONSUMERS = "tests/integration/explore/consumers"
TWO_BUGS = f"{CONSUMERS}/race_and_gap.py:handler"

runner = CliRunner()


@dataclass(frozen=True)
class Explored:
    explore: dict[str, Any]
    output: str
    html: str


@pytest.fixture(scope="module")
def explored(backend_url: str, tmp_path_factory: pytest.TempPathFactory) -> Explored:
    out = tmp_path_factory.mktemp("bugs")
    result = runner.invoke(
        app,
        [
            *("explore", "seed-lab", "--handler", TWO_BUGS, "--faults", "crash"),
            *("--copies", "2", "--endpoint-url", backend_url),
            *("--json", str(out / "bugs.json"), "--html", str(out / "bugs.html")),
        ],
    )
    assert result.exit_code == 1, result.output
    report = json.loads((out / "bugs.json").read_text(encoding="utf-8"))
    return Explored(
        report["explore"], result.output, (out / "bugs.html").read_text(encoding="utf-8")
    )


@pytest.fixture(scope="module")
def two_bugs(explored: Explored) -> dict[str, Any]:
    return explored.explore


def test_a_race_and_a_crash_gap_are_two_bugs(two_bugs: dict[str, Any]) -> None:
    explore = two_bugs
    assert explore["exhaustive"] is True and explore["bound"]["stopped_by"] == "space"
    bugs = explore["bugs"]
    assert len(bugs) == 2, [(b["reasons"], b["departure"]) for b in bugs]
    # Every failing schedule of the search is one of the two.
    assert sum(b["schedules"] for b in bugs) == explore["schedules_failed"] > 2
    gap, race = sorted(bugs, key=lambda b: -b["faults"])
    assert gap["faults"] == 1 and gap["counts"]["lost_outcomes"] == 1
    assert gap["counts"]["duplicate_writes"] == 0
    assert gap["departure"] == "a crash after the delivery's read, write"
    assert race["faults"] == 0 and race["counts"]["duplicate_writes"] >= 1
    assert race["counts"]["lost_outcomes"] == 0
    assert race["departure"] == "another delivery going first after the delivery's read"
    # The counterexample is the smallest of them, as the report always had it.
    smallest = bugs[0]
    assert explore["counterexample"] == {k: smallest[k] for k in explore["counterexample"]}
    assert explore["replay"] == smallest["replay"]


def test_each_bug_s_token_replays_its_own_failure_exactly(
    two_bugs: dict[str, Any], backend_url: str
) -> None:
    for bug in two_bugs["bugs"]:
        assert bug["replay"].endswith(f"--schedule {bug['schedule']}")
        again = loadtest.explore(
            "seed-lab",
            handler=TWO_BUGS,
            faults="crash",
            copies=2,
            schedule=bug["schedule"],
            endpoint_url=backend_url,
        )
        assert again.exit_code == 1
        replayed = again.to_dict()["explore"]
        [only] = replayed["bugs"]
        assert only["schedule"] == bug["schedule"]
        assert only["counts"] == bug["counts"] and only["reasons"] == bug["reasons"]
        assert only["steps"] == bug["steps"]


def test_stop_at_first_keeps_the_quick_gate(backend_url: str, tmp_path: Path) -> None:
    out = tmp_path / "first.json"
    result = runner.invoke(
        app,
        [
            *("explore", "seed-lab", "--handler", TWO_BUGS, "--faults", "crash"),
            *("--copies", "2", "--stop-at-first", "--endpoint-url", backend_url),
            *("--json", str(out)),
        ],
    )
    assert result.exit_code == 1, result.output
    explore = json.loads(out.read_text(encoding="utf-8"))["explore"]
    assert explore["stop_at_first"] is True and explore["schedules_failed"] == 1
    assert explore["bound"]["stopped_by"] == "first_failure"
    assert explore["exhaustive"] is False and explore["bound"]["exhaustive"] is False
    [bug] = explore["bugs"]
    assert bug["schedule"] == explore["counterexample"]["schedule"]
    assert "shrunk from the first failing schedule:" in result.output
    assert "bugs:" not in result.output


def test_the_terminal_and_the_page_show_every_bug(explored: Explored) -> None:
    bugs = explored.explore["bugs"]
    assert "bugs: 2 distinct, in " in explored.output
    for n, bug in enumerate(bugs, start=1):
        assert f"  {n}. {'; '.join(bug['reasons'])} ({bug['schedules']} schedule(s)" in (
            explored.output
        )
        assert f"     replay: {bug['replay']}" in explored.output
    html = explored.html
    assert html.count('<section class="bug"') == 2
    for n, bug in enumerate(bugs, start=1):
        section = html[html.index(f'id="explore-bug-{n}"') :]
        section = section[: section.index("</section>")]
        assert f"Bug {n}" in section and bug["schedule"] in section
        assert section.count("<tr><td>") == len(bug["steps"])


def test_a_bugs_reasons_name_the_scenarios_ids_and_an_allowed_failure_says_so(
    backend_url: str, tmp_path: Path
) -> None:
    # The built-in effects scenario allows publish-after-guard's lost events: explore
    # finds them, names the order as the scenario does (never a schedule's fresh id), and
    # says why the verdict still passes.
    result = runner.invoke(
        app,
        [
            *("explore", "effects", "--variant", "publish-after-guard", "--faults", "crash"),
            *("--copies", "1", "--endpoint-url", backend_url),
            *("--json", str(tmp_path / "effects.json")),
            *("--html", str(tmp_path / "effects.html")),
        ],
    )
    assert result.exit_code == 0, result.output
    explore = json.loads((tmp_path / "effects.json").read_text(encoding="utf-8"))["explore"]
    [bug] = explore["bugs"]
    assert bug["counts"]["lost_effects"] == 1
    assert bug["reasons"] == [
        "1 lost effect(s): order-00004 never published to orders.fifo "
        "(message message-1 acknowledged)"
    ]
    assert "order-00004_s" not in result.output
    # The page's run (the shown schedule) names the order as the scenario does too.
    page = (tmp_path / "effects.html").read_text(encoding="utf-8")
    assert "order-00004" in page and "order-00004_s" not in page
    assert "verdict: pass (what failed is expected by this scenario" in result.output
