"""The function's configuration as deployed, on the embedded backend: variables naming the
run's resources, a hard-coded table name, extra tables, and the harness never blamed for
what it did not provide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from loadtest.aws import clients as aws
from loadtest.engine import RunResult, VariantRun
from loadtest.model.scenario.loading import Scenario, load_scenario, parse_scenario, to_raw
from loadtest.reports.report import build_report
from tests.integration.helpers import client, run_variants

HERE = Path(__file__).parent
CONFIGURED = HERE / "configured"
PUBLIC = HERE / "public"
POWERTOOLS = f"{PUBLIC / 'powertools_idempotency_batch.py'}:lambda_handler"


def _run(backend_url: str, scenario: Scenario, handler: str) -> VariantRun:
    (run,) = run_variants(scenario, backend_url, handler).runs
    return run


def _without(scenario: Scenario, *path: str) -> Scenario:
    """The scenario with one entry of its raw form left out (``("table", "name")``...)."""
    raw: Any = to_raw(scenario)
    holder = raw
    for step in path[:-1]:
        holder = holder[step]
    del holder[path[-1]]
    return parse_scenario(raw, source=scenario.source, default_name=scenario.name)


# --- variables that name the run's resources; --env wins over the file ------------------


@pytest.fixture(scope="module")
def env_named(backend_url: str) -> VariantRun:
    scenario = load_scenario(str(CONFIGURED / "env_named.toml")).with_environment(
        ["WHERE=cli {region}"]
    )
    return _run(backend_url, scenario, f"{CONFIGURED / 'env_named.py'}:handler")


def test_variables_name_the_runs_own_resources(env_named: VariantRun) -> None:
    run = env_named
    items = run.end_state.table_items
    assert len(items) == 10
    for item in items.values():
        assert item["seen_queue"]["S"].endswith("/" + run.resources.queue)
        assert item["seen_dlq"]["S"].endswith("/" + run.resources.dlq)
        # The command line's value wins over the file's, placeholders filled in too.
        assert item["seen_region"] == {"S": "cli us-east-1"}


def test_a_table_keyed_otherwise_is_judged_without_declaring_where_outcomes_live(
    env_named: VariantRun,
) -> None:
    # [table] key = { orderId = "S" } builds the table; the outcome is found on its own.
    c = env_named.check.counts
    assert sorted(k for k in next(iter(env_named.end_state.table_items.values()))) == [
        "orderId",
        "quantity",
        "seen_dlq",
        "seen_queue",
        "seen_region",
    ]
    assert (c.messages_sent, c.acked, c.dead_lettered) == (30, 30, 0)
    assert c.writes_accepted == 30
    # A plain put: each id's two resends wrote its outcome again.
    assert c.duplicate_writes == 20
    assert env_named.check.reasons == ("20 duplicate write(s): an outcome was written again",)
    assert env_named.check.outcome == "outcome items keyed orderId = '{id}'"
    assert c.handler_errors == 0
    assert c.lost_outcomes == 0
    assert not any("stored by no write" in r for r in env_named.check.inconclusive)


def test_a_variable_the_run_does_not_set_is_the_runs_gap(backend_url: str) -> None:
    scenario = _without(
        load_scenario(str(CONFIGURED / "env_named.toml")), "consumer", "environment", "DLQ"
    )
    run = _run(
        backend_url,
        # A failed message is dead-lettered once its visibility timeout has passed: a short
        # one (the handler fails at once) rather than the default 30 s.
        scenario.with_overrides(max_receive_count=1, visibility_timeout_s=3, function_timeout_s=3),
        f"{CONFIGURED / 'env_named.py'}:handler",
    )
    c = run.check.counts
    assert run.check.verdict == "inconclusive"
    assert run.check.reasons == ()
    assert (c.acked, c.dead_lettered, c.handler_errors) == (0, 30, 30)
    assert run.check.inconclusive[0] == (
        "the handler read os.environ['DLQ'], which the run does not set: add "
        '`[consumer] environment = { DLQ = "{dlq_url}" }` to the scenario '
        "(or --env DLQ={dlq_url}) (30 invocation(s))"
    )


# --- a hard-coded table name -----------------------------------------------------------


@pytest.fixture(scope="module")
def hardcoded(backend_url: str) -> VariantRun:
    scenario = load_scenario(str(CONFIGURED / "hardcoded_orders.toml"))
    return _run(backend_url, scenario, f"{CONFIGURED / 'hardcoded_orders.py'}:handler")


def test_a_hard_coded_table_is_the_runs_own_and_deleted_after(
    hardcoded: VariantRun, backend_url: str
) -> None:
    run = hardcoded
    c = run.check.counts
    assert run.resources.table == "Orders"
    assert run.check.verdict == "pass", run.check.reasons
    assert (c.acked, c.writes_accepted, c.writes_rejected, c.duplicate_writes) == (30, 10, 20, 0)
    assert len(run.end_state.table_items) == 10
    assert "Orders" not in client("dynamodb", backend_url).list_tables()["TableNames"]


def test_a_hard_coded_table_the_run_did_not_make_is_named_with_its_fix(backend_url: str) -> None:
    scenario = _without(load_scenario(str(CONFIGURED / "hardcoded_orders.toml")), "table", "name")
    run = _run(backend_url, scenario, f"{CONFIGURED / 'hardcoded_orders.py'}:handler")
    c = run.check.counts
    assert run.check.verdict == "inconclusive"
    assert run.check.reasons == ()
    assert (c.acked, c.dead_lettered, c.handler_errors) == (0, 30, 60)
    assert run.check.inconclusive[0] == (
        "the handler's PutItem found no table 'Orders', which the run did not create: for a "
        'name the handler hard-codes, `[table] name = "Orders"` (its outcome table) or '
        '`[[tables]]` with `name = "Orders"` (an extra table); for a name it reads from a '
        'variable, `[consumer] environment = { NAME = "{table}" }` or `[[tables]]` with '
        '`env = "NAME"` (60 invocation(s))'
    )
    assert any(r.startswith("30 unexpected dead letter(s)") for r in run.check.inconclusive)


# --- Powertools' own example, unchanged: an extra table, and no business outcome ------------


def test_powertools_example_with_its_idempotency_table_is_inconclusive_not_failed(
    backend_url: str,
) -> None:
    scenario = load_scenario(str(PUBLIC / "powertools_idempotency_batch.toml"))
    run = _run(backend_url, scenario, POWERTOOLS)
    c = run.check.counts
    assert run.check.verdict == "inconclusive"
    assert run.check.reasons == ()
    assert (c.messages_sent, c.acked, c.dead_lettered, c.handler_errors) == (20, 20, 0, 0)
    assert c.writes_attempted == 0
    # Powertools' record of each message: saved in progress, then updated with its result.
    assert c.side_writes == 40
    # One idempotency record per message (its key is the messageId): side writes.
    assert run.end_state.side_tables == ((f"{run.resources.prefix}-idempotency", 20),)
    # Created for the run, deleted after it.
    tables = client("dynamodb", backend_url).list_tables()["TableNames"]
    assert f"{run.resources.prefix}-idempotency" not in tables
    report = build_report(
        RunResult(scenario, aws.Target.resolve(aws.BackendKind.ENDPOINT, backend_url), [run])
    )
    assert report["runs"][0]["table_after"] == {
        "items": 0,
        "side_tables": {f"{run.resources.prefix}-idempotency": 20},
    }
    assert report["runs"][0]["verdict"] == "inconclusive"
    assert run.check.inconclusive[0].startswith(
        "no business outcome to judge: the handler stored nothing in its outcome table"
    )
    assert not any("ResourceNotFound" in r or "os.environ" in r for r in run.check.inconclusive)


def test_powertools_example_without_its_table_is_never_failed(backend_url: str) -> None:
    scenario = _without(load_scenario(str(PUBLIC / "powertools_idempotency_batch.toml")), "tables")
    run = _run(backend_url, scenario.with_overrides(max_receive_count=1), POWERTOOLS)
    c = run.check.counts
    assert run.check.verdict == "inconclusive"
    assert run.check.reasons == ()
    assert (c.acked, c.dead_lettered) == (0, 20)
    assert run.check.inconclusive[0].startswith(
        "the handler gave no table name (None or empty): a variable it reads with "
        "os.environ.get or os.getenv is not set by the run"
    )


# --- on AWS, a table the scenario names is never one that exists already ---------------------


def test_on_aws_an_existing_table_of_the_named_name_is_refused(backend_url: str) -> None:
    import anyio

    from loadtest.errors import TableExistsError

    dynamodb = client("dynamodb", backend_url)
    dynamodb.create_table(
        TableName="Theirs",
        KeySchema=[{"AttributeName": "orderId", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "orderId", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    # Real AWS as the adapter sees it, reached at the embedded backend's address.
    target = aws.Target(aws.BackendKind.AWS, backend_url, "us-east-1", aws.EMBEDDED_CREDENTIALS)
    made = aws.Provisioned()
    names = aws.ResourceNames("loadtest-x-0-jobs", "loadtest-x-0-dlq", "Theirs", "loadtest-x-0")

    async def provision() -> None:
        async with aws.clients(target) as (sqs, ddb):
            await aws.provision(
                sqs,
                ddb,
                names,
                visibility_timeout_s=30,
                max_receive_count=3,
                into=made,
                target=target,
                key_schema=(("orderId", "S"),),
            )

    try:
        with pytest.raises(TableExistsError) as info:
            anyio.run(provision)
        assert str(info.value).startswith(
            "table 'Theirs' already exists in us-east-1; the run creates and deletes its own "
            "tables and never touches one it did not make"
        )
        assert made.names() == []  # refused before anything was created
    finally:
        dynamodb.delete_table(TableName="Theirs")


def test_a_variable_missing_at_import_stops_the_run_naming_its_line(backend_url: str) -> None:
    from loadtest.errors import HandlerRefError

    scenario = load_scenario(str(CONFIGURED / "env_named.toml"))
    with pytest.raises(HandlerRefError) as info:
        _run(backend_url, scenario, f"{CONFIGURED / 'import_env.py'}:handler")
    assert str(info.value).endswith(
        "could not be loaded: KeyError: 'ORDERS_TABLE' [os.environ has no 'ORDERS_TABLE']; "
        "the handler read os.environ['ORDERS_TABLE'], which the run does not set: add "
        '`[consumer] environment = { ORDERS_TABLE = "{table}" }` to the scenario '
        "(or --env ORDERS_TABLE={table})"
    )
    # Given, the same handler imports and runs.
    run = _run(
        backend_url,
        scenario.with_environment(["ORDERS_TABLE={table}"]),
        f"{CONFIGURED / 'import_env.py'}:handler",
    )
    assert (run.check.counts.handler_errors, run.check.counts.acked) == (0, 30)
    assert len(run.end_state.table_items) == 30  # one item per message, keyed by its messageId
