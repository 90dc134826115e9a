"""loadtest.model.scenario.loading: parsing, refusals, built-ins, overrides and round trips."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from loadtest.errors import InputError, LoadtestError, ScenarioError
from loadtest.model.scenario.loading import (
    Arrival,
    ConsumerSettings,
    ExplicitMessage,
    Order,
    RunSettings,
    Scenario,
    Workload,
    builtin_scenarios,
    load_scenario,
    parse_scenario,
    to_raw,
)

VALID = """\
name = "burst-small"
description = "a small burst"
seed = 42
variants = ["read-then-write", "conditional"]

[workload]
distinct_ids = 20
copies = 2
id_prefix = "job"
arrival = "burst"
order = "shuffled"

[consumer]
batch_size = 10
visibility_timeout_s = 5
concurrency = 3
max_receive_count = 2
function_timeout_s = 4
memory_mb = 256
report_batch_item_failures = true

[run]
deadline_s = 60
"""


def write_toml(tmp_path: Path, text: str, name: str = "scenario.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def refusal(raw: dict[str, Any], source: str = "test.toml") -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(raw, source=source)
    return str(info.value)


def test_valid_file_parses_every_field(tmp_path: Path) -> None:
    path = write_toml(tmp_path, VALID)
    scenario = load_scenario(str(path))
    assert scenario == Scenario(
        name="burst-small",
        description="a small burst",
        seed=42,
        variants=("read-then-write", "conditional"),
        workload=Workload(
            distinct_ids=20,
            copies=2,
            id_prefix="job",
            arrival=Arrival.BURST,
            order=Order.SHUFFLED,
            messages=(),
        ),
        consumer=ConsumerSettings(
            batch_size=10,
            visibility_timeout_s=5,
            concurrency=3,
            max_receive_count=2,
            function_timeout_s=4,
            memory_mb=256,
            report_batch_item_failures=True,
        ),
        run=RunSettings(deadline_s=60.0),
        source=str(path),
    )
    assert isinstance(scenario.run.deadline_s, float)
    assert scenario.workload.order is Order.SHUFFLED


def test_empty_file_is_refused(tmp_path: Path) -> None:
    # An empty file must not run a default 300-message workload silently.
    path = write_toml(tmp_path, "", name="my-empty.toml")
    with pytest.raises(ScenarioError, match="the scenario is empty"):
        load_scenario(str(path))


def test_a_file_with_only_a_table_gets_defaults_and_the_file_name(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "[workload]\n", name="my empty!.toml")
    scenario = load_scenario(str(path))
    assert scenario.name == "my-empty"
    assert scenario.variants == ("conditional",)
    assert scenario.seed == 1
    assert scenario.workload == Workload()
    assert scenario.consumer == ConsumerSettings()
    assert scenario.run == RunSettings()


@pytest.mark.parametrize("name", ["../escaped", "a/b", "", ".hidden", "x" * 65, "bell\x07"])
def test_unsafe_names_are_refused(name: str) -> None:
    with pytest.raises(ScenarioError, match="is not allowed"):
        parse_scenario({"name": name}, source="test.toml")


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="is a directory"):
        load_scenario(str(tmp_path))


def test_explicit_messages_parse_in_order() -> None:
    scenario = parse_scenario(
        {
            "workload": {
                "messages": [
                    {"body": {"id": "a", "quantity": 2}, "copies": 2},
                    {"body": {"id": "b", "quantity": 3}},
                ]
            }
        },
        source="mem",
    )
    assert scenario.workload.messages == (
        ExplicitMessage(body={"id": "a", "quantity": 2}, copies=2),
        ExplicitMessage(body={"id": "b", "quantity": 3}, copies=1),
    )


def test_scenario_error_is_an_input_error_and_a_value_error() -> None:
    assert issubclass(ScenarioError, InputError)
    assert issubclass(ScenarioError, LoadtestError)
    assert issubclass(ScenarioError, ValueError)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"bogus": 1}, "'bogus'"),
        ({"workload": {"bogus": 1}}, "workload.'bogus'"),
        ({"consumer": {"bogus": 1}}, "consumer.'bogus'"),
        ({"run": {"bogus": 1}}, "run.'bogus'"),
        (
            {"workload": {"messages": [{"body": {"id": "x"}, "bogus": 1}]}},
            "workload.messages[0].'bogus'",
        ),
    ],
)
def test_unknown_keys_are_refused_with_the_allowed_keys(raw: dict[str, Any], field: str) -> None:
    message = refusal(raw)
    assert message.startswith("test.toml: ")
    assert f"unknown key {field}" in message
    assert "allowed: " in message


def test_unknown_key_messages_list_the_allowed_keys_of_each_table() -> None:
    assert refusal({"bogus": 1}).endswith(
        "allowed: consumer, description, effects, expect, faults, lint, name, outcome, run, "
        "seed, table, tables, thresholds, variants, verdict, workload"
    )
    assert refusal({"expect": {"bogus": 1}}).endswith(
        "unknown key expect.'bogus'; allowed: overlap"
    )
    assert refusal({"expect": {"overlap": "no"}}).endswith(
        "expect.overlap must be true or false, got 'no'"
    )
    assert refusal({"workload": {"bogus": 1}}).endswith(
        "allowed: arrival, attributes, body, conflict_fraction, copies, copy_spacing, "
        "copy_spread_s, deduplication, distinct_ids, envelope, id_prefix, message_group, "
        "message_groups, messages, order, poison_fraction, ramp_from_per_s, rate_per_s"
    )
    assert refusal({"consumer": {"bogus": 1}}).endswith(
        "allowed: batch_size, batching_window_s, concurrency, environment, fifo, "
        "function_timeout_s, max_receive_count, memory_mb, report_batch_item_failures, visibility_timeout_s"
    )
    assert refusal({"faults": {"bogus": 1}}).endswith(
        "allowed: crash_after_write, crash_mid_handler, dedup_window_s, handler_duration_ms, "
        "handler_jitter_ms, point, race_window_ms"
    )
    assert refusal({"run": {"bogus": 1}}).endswith("allowed: deadline_s, max_backlog, producers")
    assert refusal({"workload": {"messages": [{"body": {}, "bogus": 1}]}}).endswith(
        "allowed: body, copies, poison"
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"consumer": {"batch_size": "1"}},
            "test.toml: consumer.batch_size must be an integer, got '1'",
        ),
        (
            {"consumer": {"batch_size": 1.5}},
            "test.toml: consumer.batch_size must be an integer, got 1.5",
        ),
        (
            {"consumer": {"batch_size": True}},
            "test.toml: consumer.batch_size must be an integer, got True",
        ),
        (
            {"workload": {"copies": False}},
            "test.toml: workload.copies must be an integer, got False",
        ),
        ({"seed": True}, "test.toml: seed must be an integer, got True"),
        ({"run": {"deadline_s": "60"}}, "test.toml: run.deadline_s must be a number, got '60'"),
        ({"run": {"deadline_s": True}}, "test.toml: run.deadline_s must be a number, got True"),
        ({"name": 3}, "test.toml: name must be a string, got 3"),
        ({"workload": {"id_prefix": 3}}, "test.toml: workload.id_prefix must be a string, got 3"),
        (
            {"consumer": {"report_batch_item_failures": 1}},
            "test.toml: consumer.report_batch_item_failures must be true or false, got 1",
        ),
        ({"workload": 3}, "test.toml: workload must be a table, got int"),
        ({"consumer": [1]}, "test.toml: consumer must be a table, got list"),
        (
            {"variants": "conditional"},
            "test.toml: variants must be a list of names, got 'conditional'",
        ),
        ({"variants": [""]}, "test.toml: variants must be a list of names, got ['']"),
        (
            {"workload": {"messages": {"body": {}}}},
            "test.toml: workload.messages must be an array of tables",
        ),
        (
            {"workload": {"messages": [3]}},
            "test.toml: workload.messages[0] must be a table with body and copies",
        ),
        (
            {"workload": {"messages": [{"body": "x"}]}},
            "test.toml: workload.messages[0].body must be a table (the JSON message body)",
        ),
        (
            {"workload": {"messages": [{"body": {}, "copies": True}]}},
            "test.toml: workload.messages[0].copies must be an integer, got True",
        ),
    ],
)
def test_wrong_types_are_refused(raw: dict[str, Any], expected: str) -> None:
    assert refusal(raw) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"consumer": {"batch_size": 0}},
            "test.toml: consumer.batch_size = 0 is out of range; allowed 1..10 (up to 10000 with batching_window_s >= 1)",
        ),
        (
            {"consumer": {"batch_size": 11}},
            "test.toml: consumer.batch_size = 11 needs consumer.batching_window_s >= 1 (as Lambda requires for SQS batches above 10); allowed without a window: 1..10",
        ),
        (
            {"workload": {"copies": 0}},
            "test.toml: workload.copies = 0 is out of range; allowed 1..1000",
        ),
        (
            {"workload": {"messages": [{"body": {}, "copies": 0}]}},
            "test.toml: workload.messages[0].copies = 0 is out of range; allowed 1..1000",
        ),
        (
            {"consumer": {"visibility_timeout_s": 43_201}},
            "test.toml: consumer.visibility_timeout_s = 43201 is out of range; allowed 0..43200",
        ),
        (
            {"consumer": {"memory_mb": 127}},
            "test.toml: consumer.memory_mb = 127 is out of range; allowed 128..10240",
        ),
        ({"seed": -1}, "test.toml: seed = -1 is out of range; allowed 0..9223372036854775807"),
        (
            {"run": {"deadline_s": 0.5}},
            "test.toml: run.deadline_s = 0.5 is out of range; allowed 1..86400",
        ),
        (
            {"faults": {"crash_mid_handler": 1.5}},
            "test.toml: faults.crash_mid_handler = 1.5 is out of range; allowed 0..1",
        ),
    ],
)
def test_out_of_range_values_are_refused(raw: dict[str, Any], expected: str) -> None:
    assert refusal(raw) == expected


@pytest.mark.parametrize("value", [1, 10])
def test_batch_size_bounds_are_accepted(value: int) -> None:
    scenario = parse_scenario({"consumer": {"batch_size": value}}, source="mem")
    assert scenario.consumer.batch_size == value


def test_bad_arrival_names_the_allowed_values() -> None:
    assert refusal({"workload": {"arrival": "poisson"}}) == (
        "test.toml: workload.arrival = 'poisson' is not allowed; allowed: 'burst', 'rate', 'ramp'"
    )


def test_bad_order_names_the_allowed_values() -> None:
    assert refusal({"workload": {"order": "random"}}) == (
        "test.toml: workload.order = 'random' is not allowed; allowed: 'grouped', 'shuffled'"
    )


def test_malformed_toml_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = write_toml(tmp_path, 'name = "x"\n[consumer]\nbatch_size = = 3\n', name="broken.toml")
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    message = str(info.value)
    assert message.startswith(f"{path}: not valid TOML: ")
    assert "line 3" in message
    assert isinstance(info.value.__cause__, Exception)


def test_refusal_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path, "[consumer]\nbatch_size = 0\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(path))
    assert (
        str(info.value)
        == f"{path}: consumer.batch_size = 0 is out of range; allowed 1..10 (up to 10000 with batching_window_s >= 1)"
    )


def test_missing_path_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(ScenarioError) as info:
        load_scenario(str(missing))
    message = str(info.value)
    assert message.startswith(f"scenario file {str(missing)!r} does not exist")
    assert "race-burst" in message
    assert "seed-lab" in message


def test_unknown_builtin_name_lists_the_builtins() -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario("no-such-scenario")
    message = str(info.value)
    assert message.startswith("unknown scenario 'no-such-scenario'; built-in scenarios: ")
    assert "race-burst" in message
    assert "seed-lab" in message


def test_builtins_include_the_lab_and_the_race() -> None:
    builtins = builtin_scenarios()
    assert {"seed-lab", "race-burst"} <= set(builtins)
    for name, scenario in builtins.items():
        assert scenario.name == name
        assert scenario.source == f"builtin:{name}"
        assert scenario.description


def test_seed_lab_is_the_reference_lab() -> None:
    lab = load_scenario("seed-lab")
    assert lab.name == "seed-lab"
    assert lab.source == "builtin:seed-lab"
    assert lab.variants == ("conditional",)
    assert lab.consumer.batch_size == 1
    assert lab.consumer.visibility_timeout_s == 30
    assert lab.workload.arrival is Arrival.BURST
    assert lab.workload.messages == (
        ExplicitMessage(body={"id": "dedup-order", "quantity": 4}, copies=3),
        ExplicitMessage(body={"id": "other-order", "quantity": 1}, copies=1),
    )


def test_race_burst_races_two_variants() -> None:
    race = load_scenario("race-burst")
    assert race.variants == ("read-then-write", "conditional")
    assert race.workload.distinct_ids == 150
    assert race.workload.copies == 4
    assert race.workload.order is Order.GROUPED
    assert race.workload.messages == ()
    assert race.consumer.batch_size == 1
    assert race.consumer.concurrency == 8


def test_with_overrides_applies_each_section() -> None:
    lab = load_scenario("seed-lab")
    changed = lab.with_overrides(
        batch_size=10, visibility_timeout_s=2, copies=5, deadline_s=30, seed=9, concurrency=None
    )
    assert changed.consumer.batch_size == 10
    assert changed.consumer.visibility_timeout_s == 2
    assert changed.consumer.concurrency == lab.consumer.concurrency
    assert changed.workload.copies == 5
    assert changed.workload.messages == lab.workload.messages
    assert changed.run.deadline_s == 30.0
    assert changed.seed == 9
    assert changed.name == "seed-lab"
    assert changed.source == "builtin:seed-lab (with command-line overrides)"
    # The original is untouched (frozen values).
    assert lab.consumer.batch_size == 1


def test_with_overrides_ignores_none() -> None:
    lab = load_scenario("seed-lab")
    assert lab.with_overrides(batch_size=None, seed=None) is lab
    assert lab.with_overrides() is lab


def test_with_overrides_validates() -> None:
    lab = load_scenario("seed-lab")
    with pytest.raises(ScenarioError) as info:
        lab.with_overrides(batch_size=0)
    assert str(info.value) == (
        "builtin:seed-lab (with command-line overrides): consumer.batch_size = 0 "
        "is out of range; allowed 1..10 (up to 10000 with batching_window_s >= 1)"
    )
    with pytest.raises(ScenarioError, match="visibility_timeout_s must be an integer"):
        lab.with_overrides(visibility_timeout_s=True)


def test_with_overrides_refuses_unknown_keys() -> None:
    with pytest.raises(ScenarioError, match="unknown override 'bogus'"):
        load_scenario("seed-lab").with_overrides(bogus=1)


def test_with_overrides_accepts_variants() -> None:
    changed = load_scenario("seed-lab").with_overrides(variants=["unconditional", "conditional"])
    assert changed.variants == ("unconditional", "conditional")


@pytest.mark.parametrize("name", ["seed-lab", "race-burst"])
def test_to_raw_round_trips_builtins(name: str) -> None:
    scenario = load_scenario(name)
    again = parse_scenario(to_raw(scenario), source=scenario.source)
    assert again == scenario


def test_to_raw_round_trips_a_file(tmp_path: Path) -> None:
    path = write_toml(tmp_path, VALID)
    scenario = load_scenario(str(path))
    raw = to_raw(scenario)
    assert "source" not in raw
    assert raw["workload"]["order"] == "shuffled"
    assert raw["variants"] == ["read-then-write", "conditional"]
    assert parse_scenario(raw, source=str(path)) == scenario


def test_an_outcome_key_declared_as_the_default_stays_declared() -> None:
    # The checker takes a declared key at its word; the default is only where it looks first.
    declared = parse_scenario({"outcome": {"key": {"id": "{id}"}}}, source="mem")
    assert declared.outcome.declared
    assert not parse_scenario({}, source="mem").outcome.declared
    raw = to_raw(declared)
    assert raw["outcome"] == {"key": {"id": "{id}"}}
    assert parse_scenario(raw, source="mem").outcome.declared


def test_to_raw_is_plain_data() -> None:
    raw = to_raw(load_scenario("seed-lab"))
    assert raw == {
        "name": "seed-lab",
        "description": raw["description"],
        "seed": 1,
        "variants": ["conditional"],
        "thresholds": [],
        "verdict": {"allow": {}},
        "workload": {
            "distinct_ids": 100,
            "copies": 3,
            "id_prefix": "order",
            "order": "grouped",
            "copy_spacing": "at-once",
            "copy_spread_s": 0.0,
            "conflict_fraction": 0.0,
            "poison_fraction": 0.0,
            "arrival": "burst",
            "rate_per_s": 0.0,
            "ramp_from_per_s": 1.0,
            "messages": [
                {"body": {"id": "dedup-order", "quantity": 4}, "copies": 3},
                {"body": {"id": "other-order", "quantity": 1}, "copies": 1},
            ],
            "message_group": "business-id",
            "message_groups": 1,
            "deduplication": "per-message",
        },
        "consumer": dataclasses.asdict(ConsumerSettings(concurrency=1)),
        "faults": {
            "handler_duration_ms": 0,
            "handler_jitter_ms": 0,
            "race_window_ms": 0,
            "crash_after_write": 0.0,
            "crash_mid_handler": 0.0,
            "point": {},
            "dedup_window_s": 0.0,
        },
        "run": {"deadline_s": 120.0, "max_backlog": 0, "producers": 1},
        "expect": {"overlap": False},
        # The reference lab's queue settings are kept on purpose (its lint warnings intended).
        "lint": {"intended": ["visibility-timeout", "max-receive-count"]},
    }


# --- FIFO queues -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (
            {"consumer": {"fifo": True, "batch_size": 11, "batching_window_s": 1}},
            "test.toml: consumer.batch_size = 11 is not allowed with consumer.fifo = true; "
            "allowed: 1..10 (Lambda's limit for FIFO queues)",
        ),
        (
            {"consumer": {"fifo": True, "batching_window_s": 0.5}},
            "test.toml: consumer.batching_window_s = 0.5 is not allowed with consumer.fifo = "
            "true; allowed: 0 (Lambda supports no batching window for FIFO queues)",
        ),
        (
            {"consumer": {"fifo": True}, "workload": {"message_groups": 4}},
            "test.toml: workload.message_groups = 4 needs workload.message_group = 'fixed'; "
            "with 'business-id' each id is its own group (leave message_groups out)",
        ),
        (
            {"workload": {"deduplication": "business-id"}},
            "test.toml: workload.deduplication is set but consumer.fifo = false; it applies to "
            "FIFO queues only: set consumer.fifo = true or leave it out",
        ),
        (
            {"faults": {"dedup_window_s": 5}},
            "test.toml: faults.dedup_window_s is set but consumer.fifo = false; it applies to "
            "FIFO queues only: set consumer.fifo = true or leave it out",
        ),
        (
            {"consumer": {"fifo": True}, "workload": {"deduplication": "per-business"}},
            "test.toml: workload.deduplication = 'per-business' is not allowed; allowed: "
            "'per-message', 'business-id', 'content'",
        ),
        (
            {"consumer": {"fifo": True}, "faults": {"dedup_window_s": 301}},
            "test.toml: faults.dedup_window_s = 301 is out of range; allowed 0..300",
        ),
    ],
)
def test_impossible_fifo_settings_are_refused_naming_field_value_and_allowed(
    raw: dict[str, Any], expected: str
) -> None:
    assert refusal(raw) == expected


def test_fifo_settings_parse_and_override() -> None:
    scenario = parse_scenario(
        {
            "consumer": {"fifo": True, "batch_size": 10},
            "workload": {"message_group": "fixed", "message_groups": 3, "deduplication": "content"},
            "faults": {"dedup_window_s": 2},
        },
        source="test.toml",
    )
    assert scenario.consumer.fifo
    assert scenario.workload.message_groups == 3
    assert "FIFO deduplication window shortened to 2 s (SQS: 300 s)" in scenario.faults.describe()
    with pytest.raises(ScenarioError, match="batching_window_s = 2 is not allowed"):
        scenario.with_overrides(batching_window_s=2)
    assert not scenario.with_overrides(
        fifo=False,
        message_group="business-id",
        message_groups=1,
        deduplication="per-message",
        dedup_window_s=0,
    ).consumer.fifo
