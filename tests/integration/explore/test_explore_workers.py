"""An exhaustive search run by several worker processes answers what one process answers:
the same report (schedules, verdict, bound, bugs with their replay tokens, the shown run),
however often the caller explored before."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import loadtest
from loadtest.cli import app
from loadtest.engine.explore_workers import (
    SPREAD_AFTER,
    WORKERS_ENV,
    Workers,
    fixed_names,
    workers_for,
)
from loadtest.errors import InputError
from loadtest.model.scenario.loading import load_scenario
from tests.integration.helpers import client

CONSUMERS = Path(__file__).parent / "consumers"
TIMING = {"elapsed_s", "schedules_per_s"}


def _explore(backend_url: str, workers: int, **options: Any) -> tuple[int, dict[str, Any]]:
    """The exit code and the whole report but for how long it took."""
    report = loadtest.explore("seed-lab", endpoint_url=backend_url, workers=workers, **options)
    data = report.to_dict()
    data["explore"] = {k: v for k, v in data["explore"].items() if k not in TIMING}
    return report.exit_code, data


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [
        {"variant": "conditional", "faults": "crash,redeliver"},
        {"handler": f"{CONSUMERS / 'claim_trusting'}.py:handler", "copies": 2, "faults": "crash"},
        {"variant": "read-then-write", "copies": 3},
    ],
    ids=["conditional-passes", "claim-loses-outcomes", "race-duplicates"],
)
def test_two_workers_answer_what_one_process_answers(
    backend_url: str, options: dict[str, Any]
) -> None:
    alone = _explore(backend_url, 1, **options)
    # Twice: the second time this process holds the clients (and their open connections)
    # of the explorations before it, which each worker starts as a copy of.
    for _ in range(2):
        assert _explore(backend_url, 2, **options) == alone
    exit_code, data = alone
    explore = data["explore"]
    assert explore["exhaustive"] is True and explore["schedules_run"] > 1
    assert exit_code == (1 if explore["bugs"] else 0)


def test_three_workers_on_two_bugs_answer_what_one_process_answers(backend_url: str) -> None:
    # More workers than cores: branches are asked for and handed away while others idle.
    options = {"handler": f"{CONSUMERS / 'race_and_gap'}.py:handler", "copies": 2}
    alone = _explore(backend_url, 1, faults="crash", **options)
    assert _explore(backend_url, 3, faults="crash", **options) == alone
    assert len(alone[1]["explore"]["bugs"]) == 2


def test_the_other_workers_are_forked_only_for_a_space_the_first_does_not_cover_alone(
    backend_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    forked: list[int] = []
    fork = Workers._fork

    def counted(workers: Workers, number: int) -> None:
        forked.append(number)
        fork(workers, number)

    monkeypatch.setattr(Workers, "_fork", counted)
    small = _explore(backend_url, 2, variant="conditional")
    assert small == _explore(backend_url, 1, variant="conditional")
    assert small[1]["explore"]["schedules_run"] < SPREAD_AFTER and forked == [0]
    forked.clear()
    large = _explore(backend_url, 2, variant="read-then-write")
    assert large[1]["explore"]["schedules_run"] > SPREAD_AFTER and forked == [0, 1]


def test_a_hard_coded_table_is_searched_in_one_process(tmp_path: Path) -> None:
    scenario = tmp_path / "fixed.toml"
    scenario.write_text('name = "fixed"\n\n[table]\nname = "Orders"\n')
    loaded = load_scenario(str(scenario))
    assert fixed_names(loaded) == ("Orders",)
    assert workers_for(4, loaded) == 1
    assert workers_for(3, load_scenario("seed-lab")) == 3


def test_a_worker_whose_handler_ends_its_process_is_no_verdict_and_leaves_nothing(
    backend_url: str,
) -> None:
    def tables() -> set[str]:
        return set(client("dynamodb", backend_url).list_tables()["TableNames"])

    before = tables()
    result = CliRunner().invoke(
        app,
        [
            *("explore", "seed-lab", "--handler", f"{CONSUMERS / 'ends_its_process'}.py:handler"),
            *("--workers", "2", "--endpoint-url", backend_url, "--quiet"),
        ],
    )
    assert result.exit_code == 4, result.output
    assert "explore worker 0 ended while it searched (exit 7)" in result.output
    assert "--workers 1" in result.output and "Traceback" not in result.output
    # The other worker and the explore process dropped their tables themselves; the one
    # whose process ended had said what it made, and the explore process dropped that.
    assert tables() == before


@pytest.mark.parametrize("value", ["two", "0", "-1", "1.5", "²"])
def test_a_bad_workers_variable_is_bad_input_naming_it(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WORKERS_ENV, value)
    with pytest.raises(InputError, match=rf"{WORKERS_ENV}='{re.escape(value)}': expected"):
        workers_for()
    monkeypatch.setenv(WORKERS_ENV, "3")
    assert workers_for() == 3 and workers_for(2) == 2  # the argument wins over the variable
