"""loadtest.model.search.shrink: the search over a workload's dimensions, and the TOML it writes."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import Any

import pytest

from loadtest.model.scenario.loading import builtin_scenarios, load_scenario, parse_scenario, to_raw
from loadtest.model.search.shrink import Outcome, shrink, to_toml


def test_every_builtin_scenario_survives_the_toml_it_is_written_as() -> None:
    for name, scenario in builtin_scenarios().items():
        text = to_toml(to_raw(scenario), header=f"{name}\nsecond line")
        assert text.startswith(f"# {name}\n# second line\n")
        again = parse_scenario(tomllib.loads(text), source="x.toml", default_name=name)
        assert to_raw(again) == to_raw(scenario), name


def test_the_search_ends_at_the_smallest_failing_workload() -> None:
    race = load_scenario("race-burst").with_overrides(race_window_ms=20)
    seen: list[dict[str, Any]] = []

    def probe(overrides: Mapping[str, Any]) -> Outcome:
        seen.append(dict(overrides))
        values = {"distinct_ids": 150, "copies": 4, "concurrency": 8, **overrides}
        # A race needs two copies processed by two environments at once.
        fails = values["copies"] >= 2 and values["concurrency"] >= 2
        return Outcome(7 if fails else None, "duplicate_writes = 1" if fails else "")

    found = shrink(race, probe, Outcome(7, "duplicate_writes = 40"))
    assert found.overrides == {
        "race_window_ms": 0,
        "distinct_ids": 1,
        "copies": 2,
        "concurrency": 2,
    }
    assert found.seed == 7 and found.detail == "duplicate_writes = 1"
    assert found.kept == {
        "copies": "2: with 1 it did not fail in the tries made",
        "concurrency": "2: with 1 it did not fail in the tries made",
    }
    # Each probe names the field it tries last.
    assert [list(o)[-1] for o in seen][:3] == ["race_window_ms", "distinct_ids", "copies"]
    assert {"copies": 1} in [{k: v for k, v in o.items() if k == "copies"} for o in seen]


def test_bisection_finds_a_threshold_between_floor_and_start() -> None:
    race = load_scenario("race-burst")

    def probe(overrides: Mapping[str, Any]) -> Outcome:
        ids = overrides.get("distinct_ids", 150)
        return Outcome(3 if ids >= 37 else None)

    found = shrink(race, probe, Outcome(3))
    assert found.overrides["distinct_ids"] == 37
    assert found.kept["distinct_ids"] == "37: with 36 it did not fail in the tries made"


def test_the_budget_is_respected_and_said() -> None:
    race = load_scenario("race-burst")
    calls = 0

    def probe(overrides: Mapping[str, Any]) -> Outcome:
        nonlocal calls
        calls += 1
        return Outcome(None)

    found = shrink(race, probe, Outcome(1), max_probes=3)
    assert calls == 3
    assert found.overrides == {}
    assert "the search stopped after 3 candidates" in found.kept["distinct_ids"]


def test_a_workload_that_does_not_fail_cannot_be_shrunk() -> None:
    with pytest.raises(ValueError):
        shrink(load_scenario("race-burst"), lambda o: Outcome(None), Outcome(None))
