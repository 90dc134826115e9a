"""loadtest.model.scenario.function_config: the function's variables, its table and extra tables, as a
scenario declares them, and the variables rendered for a run."""

from __future__ import annotations

from typing import Any

import pytest

from loadtest.emulation.environment.handlers import parse_ref, tables_for
from loadtest.emulation.environment.parent_environments import FunctionConfig
from loadtest.errors import ScenarioError
from loadtest.model.history.log import OutcomeKey
from loadtest.model.scenario.function_config import (
    ExtraTable,
    FunctionSetup,
    RunResources,
    extra_table_name,
    render,
    table_names,
)
from loadtest.model.scenario.loading import parse_scenario, to_raw

RESOURCES = RunResources(
    table="loadtest-r-0-orders",
    queue_url="http://q/loadtest-r-0-jobs",
    queue_arn="arn:aws:sqs:us-east-1:1:loadtest-r-0-jobs",
    queue_name="loadtest-r-0-jobs",
    dlq_url="http://q/loadtest-r-0-dlq",
    region="eu-west-1",
    tables={"IDEMPOTENCY_TABLE": "loadtest-r-0-idempotency", "Locks": "Locks", "LOCKS": "Locks"},
)


def parse(raw: dict[str, Any]) -> Any:
    return parse_scenario({"workload": {"distinct_ids": 1}, **raw}, source="s.toml")


def refusal(raw: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as info:
        parse(raw)
    return str(info.value)


def test_every_placeholder_is_filled_with_the_runs_resources() -> None:
    scenario = parse(
        {
            "consumer": {
                "environment": {
                    "DYNAMODB_TABLE": "{table}",
                    "QUEUE": "{queue_url}",
                    "ARN": "{queue_arn}",
                    "QUEUE_NAME": "{queue_name}",
                    "DLQ": "{dlq_url}",
                    "WHERE": "region={region}",
                    "LOCK_TABLE": "{table:Locks}",
                    "PLAIN": "as is",
                }
            },
            "tables": [
                {"env": "IDEMPOTENCY_TABLE"},
                {"name": "Locks", "key": {"pk": "S", "sk": "N"}, "env": "LOCKS"},
            ],
        }
    )
    assert render(scenario.function, RESOURCES) == {
        "IDEMPOTENCY_TABLE": "loadtest-r-0-idempotency",
        "LOCKS": "Locks",
        "DYNAMODB_TABLE": "loadtest-r-0-orders",
        "QUEUE": "http://q/loadtest-r-0-jobs",
        "ARN": "arn:aws:sqs:us-east-1:1:loadtest-r-0-jobs",
        "QUEUE_NAME": "loadtest-r-0-jobs",
        "DLQ": "http://q/loadtest-r-0-dlq",
        "WHERE": "region=eu-west-1",
        "LOCK_TABLE": "Locks",
        "PLAIN": "as is",
    }
    assert scenario.function.tables == (
        ExtraTable(name=None, key=(("id", "S"),), env="IDEMPOTENCY_TABLE"),
        ExtraTable(name="Locks", key=(("pk", "S"), ("sk", "N")), env="LOCKS"),
    )


def test_the_command_line_wins_over_the_file() -> None:
    scenario = parse({"consumer": {"environment": {"A": "file", "B": "{table}"}}})
    given = scenario.with_environment(["A=cli={region}", "C=x=y"])
    assert dict(given.function.environment) == {"A": "cli={region}", "B": "{table}", "C": "x=y"}
    assert scenario.with_environment([]) is scenario


SINKS = (
    "{topic:NAME}, {topic_name:NAME}, {queue_url:NAME}, {queue_arn:NAME}, {queue_name:NAME}, "
    "{bus:NAME}, {bucket:NAME}, {state_machine:NAME}, {function:NAME}"
)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"consumer": {"environment": {"T": "{tabel}"}}},
            "s.toml: consumer.environment.T = '{tabel}': unknown placeholder {tabel}; allowed: "
            "{table}, {queue_url}, {queue_arn}, {queue_name}, {dlq_url}, {region}, " + SINKS,
        ),
        (
            {"consumer": {"environment": {"T": "{table:Nope}"}}, "tables": [{"env": "IDEM"}]},
            "s.toml: consumer.environment.T = '{table:Nope}': unknown placeholder {table:Nope}; "
            "allowed: {table}, {queue_url}, {queue_arn}, {queue_name}, {dlq_url}, {region}, {table:IDEM}, "
            f"{SINKS} ({{table:LABEL}} names a [[tables]] entry by its name or env)",
        ),
        (
            {"consumer": {"environment": {"T": 3}}},
            's.toml: consumer.environment.T must be a string, got 3; e.g. T = "{table}"',
        ),
        (
            {"consumer": {"environment": {"AWS_REGION": "x"}}},
            "s.toml: consumer.environment.AWS_REGION is set by the run itself (as Lambda sets "
            "it); leave it out",
        ),
        (
            {"consumer": {"environment": "T={table}"}},
            's.toml: consumer.environment must be a table of NAME = "VALUE", e.g. environment = '
            "{ DYNAMODB_TABLE = \"{table}\" }; got 'T={table}'",
        ),
        (
            {"table": {"key": {"orderId": "X"}}},
            "s.toml: table.key.orderId = 'X' is not allowed; allowed: 'S', 'N', 'B'",
        ),
        (
            {"table": {"key": {"a": "S", "b": "S", "c": "S"}}},
            "s.toml: table.key must be one or two attributes with their types, e.g. "
            '{ orderId = "S" } or { pk = "S", sk = "N" } (hash, then range); got '
            "{'a': 'S', 'b': 'S', 'c': 'S'}",
        ),
        (
            {"table": {"name": "x"}},
            "s.toml: table.name = 'x' is not a DynamoDB table name; allowed: 3 to 255 letters, "
            "digits, '_', '-' or '.'",
        ),
        ({"table": {"nme": "Orders"}}, "s.toml: unknown key table.'nme'; allowed: key, name"),
        (
            {"tables": [{"key": {"id": "S"}}]},
            's.toml: tables[0] needs env (the variable that names it, e.g. env = "IDEMPOTENCY_TABLE") '
            "or name (the name the consumer hard-codes)",
        ),
        (
            {"tables": [{"env": "A"}, {"env": "A"}]},
            "s.toml: tables: two tables set the same env variable 'A'",
        ),
        (
            {"tables": [{"env": "IDEM_TABLE"}, {"env": "IDEM_TABLE_NAME"}]},
            "s.toml: tables: two entries' variables give one generated table name "
            "(loadtest-...-idem); give one of them a name",
        ),
        (
            {"table": {"name": "Orders"}, "tables": [{"name": "Orders"}]},
            "s.toml: tables: two tables are both named 'Orders'",
        ),
        (
            {"tables": [{"env": "IDEM"}], "consumer": {"environment": {"IDEM": "x"}}},
            "s.toml: consumer.environment.IDEM is also a [[tables]] entry's env; the table's "
            "entry sets it: leave it out of consumer.environment",
        ),
        (
            {"tables": {"env": "A"}},
            's.toml: tables must be an array of tables ([[tables]] with key and env = "NAME")',
        ),
    ],
)
def test_bad_declarations_are_refused_naming_file_field_and_what_is_allowed(
    raw: dict[str, Any], message: str
) -> None:
    assert refusal(raw) == message


def test_a_bad_command_line_variable_is_refused_naming_the_option() -> None:
    scenario = parse({})
    with pytest.raises(ScenarioError) as info:
        scenario.with_environment(["T={nope}"])
    assert str(info.value) == (
        "--env T = '{nope}': unknown placeholder {nope}; allowed: "
        f"{{table}}, {{queue_url}}, {{queue_arn}}, {{queue_name}}, {{dlq_url}}, {{region}}, {SINKS}"
    )
    with pytest.raises(ScenarioError) as info:
        scenario.with_environment(["JUSTANAME"])
    assert str(info.value).startswith("--env 'JUSTANAME' is not allowed; give NAME=VALUE")


def test_the_table_key_builds_the_table_without_declaring_where_outcomes_live() -> None:
    scenario = parse({"table": {"name": "Orders", "key": {"orderId": "S"}}})
    assert scenario.function.table_name == "Orders"
    assert scenario.table_key_names == ("orderId",)
    assert scenario.outcome == OutcomeKey() and not scenario.outcome.declared
    judged = scenario.judged_outcome
    assert judged.templates == (("orderId", "{id}"),) and not judged.declared
    # Declared outcomes stay as declared; a two-attribute table key says nothing of them.
    declared = parse({"table": {"key": {"pk": "S"}}, "outcome": {"key": {"pk": "O#{id}"}}})
    assert declared.judged_outcome == declared.outcome and declared.judged_outcome.declared
    two = parse({"table": {"key": {"pk": "S", "sk": "N"}}})
    assert two.judged_outcome == OutcomeKey()
    assert two.function.key_schema(("id",)) == (("pk", "S"), ("sk", "N"))
    assert parse({}).function.key_schema(("id",)) == (("id", "S"),)


def test_the_declarations_survive_a_round_trip_and_overrides() -> None:
    scenario = parse(
        {
            "consumer": {"environment": {"T": "{table}"}},
            "table": {"name": "Orders", "key": {"orderId": "S"}},
            "tables": [{"env": "IDEM", "key": {"id": "S"}}],
        }
    )
    again = parse_scenario(to_raw(scenario), source="again")
    assert again.function == scenario.function
    assert scenario.with_overrides(batch_size=5).function == scenario.function


def test_variants_may_be_empty_for_handlers_given_at_run_time() -> None:
    assert parse({"variants": []}).variants == ()


def test_generated_extra_table_names_drop_the_variables_table_ending() -> None:
    for env, name in [
        ("IDEMPOTENCY_TABLE_NAME", "p-idempotency"),
        ("IDEMPOTENCY_TABLE", "p-idempotency"),
        ("LOCKS", "p-locks"),
        ("TABLE", "p-table"),
    ]:
        assert extra_table_name("p", ExtraTable(name=None, env=env)) == name
    assert extra_table_name("p", ExtraTable(name="Fixed", env="X")) == "Fixed"
    tables = (ExtraTable(name=None, env="IDEM_TABLE"), ExtraTable(name="Locks", env="L"))
    assert table_names("p", tables) == {"IDEM_TABLE": "p-idem", "Locks": "Locks", "L": "Locks"}


def test_only_the_powertools_variant_gets_an_idempotency_table() -> None:
    none = FunctionSetup()
    assert tables_for(parse_ref("conditional"), none) == ()
    (own,) = tables_for(parse_ref("powertools"), none)
    assert (own.env, own.key, own.name) == ("IDEMPOTENCY_TABLE_NAME", (("id", "S"),), None)
    # A scenario's own table behind the same variable replaces the variant's.
    declared = FunctionSetup(tables=(ExtraTable(name="Idem", env="IDEMPOTENCY_TABLE_NAME"),))
    assert tables_for(parse_ref("powertools"), declared) == declared.tables


def test_an_environment_names_only_the_tables_its_run_makes() -> None:
    config = FunctionConfig(
        handler=parse_ref("conditional"),
        function_name="f",
        table_name="t",
        region="us-east-1",
        endpoint_url=None,
        memory_mb=128,
        timeout_s=3,
        function_env=(("TABLE_NAME", "mine"), ("IDEM", "x")),
    )
    env = config.environ()
    assert "IDEMPOTENCY_TABLE_NAME" not in env
    # The scenario's variables win over the run's TABLE_NAME, never over what the run owns.
    assert (env["TABLE_NAME"], env["IDEM"], env["AWS_REGION"]) == ("mine", "x", "us-east-1")


def test_an_environment_is_told_the_queue_that_feeds_it() -> None:
    config = FunctionConfig(
        handler=parse_ref("conditional"),
        function_name="f",
        table_name="t",
        region="us-east-1",
        endpoint_url=None,
        memory_mb=128,
        timeout_s=3,
        source_queues=("http://host/1/jobs", "arn:aws:sqs:us-east-1:1:jobs"),
    )
    assert config.environ()["LOADTEST_SOURCE_QUEUES"] == (
        "http://host/1/jobs,arn:aws:sqs:us-east-1:1:jobs"
    )
