"""The deploy plan (pure) and ``run --plan`` (no AWS call, no credentials)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import tomllib
from importlib.resources import files
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from loadtest.cli import app
from loadtest.deploy.deploy_plan import (
    RUN_TAG,
    WRAPPER_HANDLER,
    Kind,
    estimate_cost,
    plan_deploy,
    render_plan,
)
from loadtest.emulation.environment.handlers import parse_ref
from loadtest.errors import InputError, ScenarioError
from loadtest.model.figures.price_tables import default_prices, load_prices
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.effects import EffectRule
from loadtest.model.scenario.loading import Scenario, load_scenario, parse_scenario

runner = CliRunner()
PRICES = default_prices()
"""Read once, outside the property tests' timed examples."""


def test_plan_lists_every_resource_of_each_variant_tagged_with_the_run() -> None:
    scenario = load_scenario("race-burst")
    refs = [parse_ref("conditional"), parse_ref("powertools")]
    plan = plan_deploy(scenario, refs, run_id="r1", region="eu-west-1")

    kinds = [r.kind for r in plan.resources]
    assert kinds.count(Kind.ROLE) == 1 and kinds.count(Kind.LAYER) == 1
    assert kinds.count(Kind.FUNCTION) == 2 and kinds.count(Kind.MAPPING) == 2
    assert kinds.count(Kind.QUEUE) == 6  # jobs, DLQ, observations per variant
    assert kinds.count(Kind.TABLE) == 3  # orders twice, idempotency once (powertools)
    for resource in plan.resources:
        if resource.kind is Kind.LAYER:
            assert f"{RUN_TAG}=r1" in resource.settings["Description"]
        else:
            assert resource.tags == {RUN_TAG: "r1"}

    function = plan.named("loadtest-r1-1-fn")
    env = function.settings["Environment"]["Variables"]
    assert function.settings["Handler"] == WRAPPER_HANDLER
    assert env["LOADTEST_ORIGINAL_HANDLER"] == "consumer.powertools.handler"
    assert env["TABLE_NAME"] == "loadtest-r1-1-orders"
    assert env["IDEMPOTENCY_TABLE_NAME"] == "loadtest-r1-1-idempotency"
    # Only the variant that needs it is told of an idempotency table.
    assert (
        "IDEMPOTENCY_TABLE_NAME"
        not in plan.named("loadtest-r1-0-fn").settings["Environment"]["Variables"]
    )
    assert function.settings["MemorySize"] == scenario.consumer.memory_mb
    assert function.settings["Timeout"] == scenario.consumer.function_timeout_s

    jobs = plan.named("loadtest-r1-0-jobs")
    assert jobs.settings["RedrivePolicy"] == {
        "deadLetterTargetArn": "loadtest-r1-0-dlq",
        "maxReceiveCount": scenario.consumer.max_receive_count,
    }
    mapping = plan.named("loadtest-r1-0-jobs -> loadtest-r1-0-fn")
    assert mapping.settings["BatchSize"] == scenario.consumer.batch_size
    assert mapping.settings["ScalingConfig"] == {
        "MaximumConcurrency": scenario.consumer.concurrency
    }
    # Dependencies come first: a deploy creates in plan order.
    assert kinds.index(Kind.ROLE) < kinds.index(Kind.FUNCTION) < kinds.index(Kind.MAPPING)


def test_the_layer_injects_the_crash_mid_handler_and_the_race_window() -> None:
    scenario = load_scenario("seed-lab").with_overrides(crash_mid_handler=0.25, race_window_ms=7)
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="r", region="us-east-1")
    env = plan.named("loadtest-r-0-fn").settings["Environment"]["Variables"]
    prefixes = ("LOADTEST_CRASH", "LOADTEST_RACE", "LOADTEST_HANDLER_")
    faults = {k: v for k, v in env.items() if k.startswith(prefixes)}
    assert faults == {"LOADTEST_CRASH_MID_HANDLER": "0.25", "LOADTEST_RACE_WINDOW_MS": "7"}
    assert any("crash_mid_handler is injected by the observer layer" in n for n in plan.notes)


def test_concurrency_below_two_uses_reserved_concurrency_and_says_so() -> None:
    scenario = load_scenario("seed-lab")  # concurrency 1, as the lab's batch-size-1 mapping
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="r", region="us-east-1")
    assert plan.named("loadtest-r-0-fn").settings["ReservedConcurrentExecutions"] == 1
    assert plan.of_kind(Kind.MAPPING)[0].settings["ScalingConfig"] == {}
    assert any("MaximumConcurrency" in note for note in plan.notes)


def test_partial_batch_responses_and_window_reach_the_mapping() -> None:
    scenario = load_scenario("seed-lab").with_overrides(
        report_batch_item_failures=True, batching_window_s=2.5, batch_size=50, concurrency=1000
    )
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="r", region="us-east-1")
    mapping = plan.of_kind(Kind.MAPPING)[0].settings
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["MaximumBatchingWindowInSeconds"] == 3
    assert mapping["ScalingConfig"] == {"MaximumConcurrency": 1000}


@given(st.integers(1, 10), st.integers(1, 40), st.integers(1, 5), st.sampled_from([128, 512, 3008]))
def test_cost_grows_with_messages_and_never_below_the_expected(
    batch_size: int, ids: int, copies: int, memory_mb: int
) -> None:
    scenario = load_scenario("race-burst").with_overrides(
        batch_size=batch_size, distinct_ids=ids, copies=copies, memory_mb=memory_mb
    )
    cost = estimate_cost(scenario, 2, PRICES)
    assert cost.messages == ids * copies * 2
    assert cost.invocations == -(-ids * copies // batch_size) * 2
    assert 0 < cost.gb_s_expected <= cost.gb_s_max
    assert cost.usd_expected <= cost.usd_max
    bigger = estimate_cost(scenario.with_overrides(copies=copies + 1), 2, PRICES)
    assert bigger.invocations >= cost.invocations and bigger.sqs_requests > cost.sqs_requests


def test_render_names_resources_permissions_and_cost() -> None:
    plan = plan_deploy(
        load_scenario("seed-lab"), [parse_ref("conditional")], run_id="r9", region="us-east-1"
    )
    text = render_plan(plan)
    for resource in plan.resources:
        assert resource.name in text
    assert "lambda:CreateEventSourceMapping" in text and "iam:PassRole" in text
    assert "GB-seconds" in text and "Lambda requests: 4" in text
    assert "loadtest:run=r9" in text
    assert "Cost estimate (us-east-1 list prices as of " in text
    assert "pass --prices" not in text  # the plan's region is the prices' region


def test_the_plan_is_priced_with_the_run_s_price_table_and_names_its_region(
    tmp_path: Path,
) -> None:
    prices = default_prices()
    scenario = load_scenario("seed-lab")
    base = plan_deploy(scenario, [parse_ref("conditional")], run_id="p", region="eu-west-1")
    table = tmp_path / "eu-west-1.toml"
    text = (
        files("loadtest.model.figures.prices")
        .joinpath("us-east-1.toml")
        .read_text(encoding="utf-8")
    )
    table.write_text(
        text.replace('region = "us-east-1"', 'region = "eu-west-1"').replace(
            "per_million_requests = 0.20", "per_million_requests = 0.40"
        ),
        encoding="utf-8",
    )
    doubled = load_prices(table)
    assert doubled.lambda_per_million_requests == 2 * prices.lambda_per_million_requests
    plan = plan_deploy(
        scenario, [parse_ref("conditional")], run_id="p", region="eu-west-1", prices=doubled
    )
    cost, was = plan.cost, base.cost
    assert cost.usd_expected - was.usd_expected == pytest.approx(
        cost.invocations * prices.lambda_per_million_requests / 1e6
    )
    shown = render_plan(plan)
    assert f"Cost estimate (eu-west-1 list prices as of 2025-06-01 ({table})" in shown
    assert "pass --prices" not in shown
    # The committed table is us-east-1's: a plan elsewhere says so.
    assert "the prices are us-east-1's, the plan's region is eu-west-1" in render_plan(base)
    # A FIFO queue's requests are priced at the FIFO rate.
    fifo = estimate_cost(scenario.with_overrides(fifo=True), 1, prices)
    standard = estimate_cost(scenario, 1, prices)
    assert fifo.sqs_requests == standard.sqs_requests
    assert fifo.usd_expected - standard.usd_expected == pytest.approx(
        standard.sqs_requests
        * (prices.sqs_fifo_per_million_requests - prices.sqs_standard_per_million_requests)
        / 1e6
    )


def test_run_plan_takes_the_prices_option() -> None:
    bad = runner.invoke(
        app, ["run", "seed-lab", "--target", "aws", "--plan", "--prices", "/nonexistent.toml"]
    )
    assert bad.exit_code == 2 and "cannot read price table /nonexistent.toml" in bad.output


def test_run_plan_exits_zero_without_credentials_or_network() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | {
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_REGION": "eu-central-1",
    }
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "run", "seed-lab", "--target", "aws", "--plan"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "in eu-central-1" in done.stdout and "event-source-mapping" in done.stdout


def test_run_plan_refuses_bad_input_with_exit_two() -> None:
    result = runner.invoke(app, ["run", "seed-lab", "--plan", "--variant", "nope"])
    assert result.exit_code == 2
    assert "unknown variant" in result.output


def test_attach_plan_creates_layer_and_queue_and_changes_the_function() -> None:
    from loadtest.deploy.deploy_plan import plan_attach

    plan = plan_attach(
        load_scenario("seed-lab"),
        function="orders-worker",
        function_role_arn="arn:aws:iam::1:role/worker",
        queue_url="https://sqs.us-east-1.amazonaws.com/1/orders",
        table="orders",
        run_id="a1",
        region="us-east-1",
    )
    assert [r.kind for r in plan.resources] == [Kind.LAYER, Kind.QUEUE, Kind.FUNCTION_CHANGE]
    change = plan.named("orders-worker")
    assert change.tags == {}  # never tagged: cleanup must never delete the user's function
    assert change.settings["Environment"]["LOADTEST_WATCH_TABLE"] == "orders"
    text = render_plan(plan)
    assert "2 resources to create, 1 to change and restore" in text
    assert "~ lambda-function-change  orders-worker" in text
    assert "lambda:UpdateFunctionConfiguration" in text


def test_a_fifo_scenario_plans_fifo_queues_and_refuses_the_window_fault() -> None:
    scenario = load_scenario("fifo-resends-deduplicated").with_overrides(deduplication="content")
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="r", region="us-east-1")
    queues = {r.purpose: r for r in plan.of_kind(Kind.QUEUE)}
    for purpose in ("job queue", "dead-letter queue"):
        assert queues[purpose].name.endswith(".fifo")
        assert queues[purpose].settings["Attributes"]["FifoQueue"] == "true"
        assert queues[purpose].settings["Attributes"]["ContentBasedDeduplication"] == "true"
    assert queues["job queue"].settings["RedrivePolicy"]["deadLetterTargetArn"].endswith(".fifo")
    assert plan.of_kind(Kind.MAPPING)[0].settings["EventSourceArn"].endswith("-jobs.fifo")
    with pytest.raises(ScenarioError, match="dedup_window_s = 2 needs loadtest's embedded"):
        plan_deploy(
            load_scenario("fifo-resends-after-window"),
            [parse_ref("conditional")],
            run_id="r",
            region="us-east-1",
        )


def _configured(extra: str = "") -> Scenario:
    return parse_scenario(
        tomllib.loads(
            """
            [workload]
            distinct_ids = 2
            [consumer.environment]
            DYNAMODB_TABLE = "{table}"
            JOBS = "{queue_url} {queue_arn} {dlq_url}"
            WHERE = "{region}"
            LOCKS = "{table:LOCK_TABLE}"
            [table]
            key = { orderId = "S", at = "N" }
            [[tables]]
            env = "LOCK_TABLE"
            key = { lock = "B" }
            """
            + extra
        ),
        source="c.toml",
    )


def test_plan_configures_the_function_and_its_tables_as_the_scenario_declares() -> None:
    plan = plan_deploy(_configured(), [parse_ref("conditional")], run_id="r2", region="eu-west-1")
    orders = plan.named("loadtest-r2-0-orders")
    assert orders.settings["KeySchema"] == [
        {"AttributeName": "orderId", "KeyType": "HASH"},
        {"AttributeName": "at", "KeyType": "RANGE"},
    ]
    assert orders.settings["AttributeDefinitions"] == [
        {"AttributeName": "orderId", "AttributeType": "S"},
        {"AttributeName": "at", "AttributeType": "N"},
    ]
    locks = plan.named("loadtest-r2-0-lock")
    assert (locks.kind, locks.settings["AttributeDefinitions"]) == (
        Kind.TABLE,
        [{"AttributeName": "lock", "AttributeType": "B"}],
    )
    function = plan.named("loadtest-r2-0-fn").settings
    env = function["Environment"]["Variables"]
    assert env["DYNAMODB_TABLE"] == "loadtest-r2-0-orders"
    assert env["LOCK_TABLE"] == env["LOCKS"] == "loadtest-r2-0-lock"
    assert env["WHERE"] == "eu-west-1"
    # Filled in by the deploy from the queues it creates first.
    assert env["JOBS"] == "{queue_url} {queue_arn} {dlq_url}"
    assert function["EnvironmentRefs"] == {
        "url": "loadtest-r2-0-jobs",
        "arn": "loadtest-r2-0-jobs",
        "dlq-url": "loadtest-r2-0-dlq",
    }
    assert env["LOADTEST_KEY_NAMES"] == "orderId,at"
    # A send to the queue that feeds the function is not an effect: the layer is told it.
    assert env["LOADTEST_SOURCE_QUEUES"] == "{queue_url},{queue_arn}"


def test_a_named_table_serves_one_deployed_variant_at_a_time() -> None:
    named = parse_scenario(
        {"workload": {"distinct_ids": 1}, "table": {"name": "Orders"}}, source="n.toml"
    )
    plan = plan_deploy(named, [parse_ref("conditional")], run_id="r3", region="eu-west-1")
    assert plan.named("Orders").kind is Kind.TABLE
    assert plan.named("loadtest-r3-0-fn").settings["Environment"]["Variables"]["TABLE_NAME"] == (
        "Orders"
    )
    with pytest.raises(ScenarioError) as info:
        plan_deploy(
            named, [parse_ref("conditional"), parse_ref("unconditional")], run_id="r3", region="x"
        )
    assert str(info.value) == (
        "n.toml: a table the scenario names (Orders) can serve one deployed variant at a time, "
        "and 2 were given: run them one by one, or let the run name its tables (leave out "
        "[table] name / [[tables]] name)"
    )


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        ({"crash_after_write": 0.5}, "crash_after_write"),
        ({"point_faults": ("crash:1",)}, "point faults"),
    ],
)
def test_faults_only_a_local_environment_injects_are_refused_on_lambda(
    overrides: dict[str, object], named: str
) -> None:
    scenario = load_scenario("race-burst").with_overrides(**overrides)
    with pytest.raises(InputError, match=f"{named}.*local execution environments only"):
        plan_deploy(scenario, [parse_ref("conditional")], run_id="r", region="us-east-1")
    from loadtest.deploy.deploy_plan import plan_attach

    with pytest.raises(InputError, match=f"{named}.*local execution environments only"):
        plan_attach(
            scenario,
            function="orders-worker",
            function_role_arn="arn:aws:iam::123456789012:role/worker",
            queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/jobs",
            table="orders",
            run_id="r",
            region="us-east-1",
        )


def test_the_plan_lists_each_sink_and_grants_the_function_what_it_sends_to_them() -> None:
    scenario = parse_scenario(
        {
            "workload": {"distinct_ids": 1},
            "consumer": {
                "environment": {
                    "ORDERS_TOPIC_ARN": "{topic:orders.fifo}",
                    "OUTBOX": "{queue_url:outbox} {queue_arn:outbox}",
                }
            },
        },
        source="s.toml",
    )
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="r1", region="eu-west-1")
    sinks = plan.of_kind(Kind.SINK)
    assert [(r.name, r.settings["Kind"], r.tags) for r in sinks] == [
        ("loadtest-r1-0-orders.fifo", "topic", {RUN_TAG: "r1"}),
        ("loadtest-r1-0-q-outbox", "queue", {RUN_TAG: "r1"}),
    ]
    assert sinks[0].settings["CaptureQueue"] == "loadtest-r1-0-t-orders.fifo"
    assert sinks[0].settings["Fifo"] == "content-based deduplication off"
    by_content = dataclasses.replace(
        scenario,
        effects=(EffectRule("orders.fifo", EffectKind.TOPIC, content_based_deduplication=True),),
    )
    planned = plan_deploy(by_content, [parse_ref("conditional")], run_id="r1", region="eu-west-1")
    fifo = planned.of_kind(Kind.SINK)[0]
    assert fifo.settings["Fifo"] == "content-based deduplication on"
    assert sinks[1].purpose == (
        "an SQS queue the consumer sends effects to ({queue_url:outbox}, {queue_arn:outbox}, "
        "{queue_name:outbox}): "
        "read back after the run, then deleted"
    )
    # Kept as placeholders in the plan: the deploy fills them in from the sinks it made.
    env = plan.named("loadtest-r1-0-fn").settings["Environment"]["Variables"]
    assert env["OUTBOX"] == "{queue_url:outbox} {queue_arn:outbox}"
    assert "sns:Publish" in plan.function_actions and "sns:CreateTopic" in plan.operator_actions
    text = render_plan(plan)
    assert "+ sink  loadtest-r1-0-orders.fifo" in text
    assert "each sink is made before the functions" in text
    plain = plan_deploy(
        load_scenario("race-burst"), [parse_ref("conditional")], run_id="r2", region="eu-west-1"
    )
    assert plain.of_kind(Kind.SINK) == [] and "sns:Publish" not in plain.function_actions


def test_the_plan_lists_a_function_sink_with_its_capture_queue_and_role() -> None:
    scenario = parse_scenario(
        {
            "workload": {"distinct_ids": 1},
            "consumer": {"environment": {"NOTIFY_FUNCTION": "{function:notify}"}},
        },
        source="s.toml",
    )
    plan = plan_deploy(scenario, [parse_ref("conditional")], run_id="r1", region="eu-west-1")
    [sink] = plan.of_kind(Kind.SINK)
    assert (sink.name, sink.settings["Kind"], sink.tags) == (
        "loadtest-r1-0-notify",
        "function",
        {RUN_TAG: "r1"},
    )
    assert sink.settings["CaptureQueue"] == "loadtest-r1-0-f-notify"
    assert sink.settings["Role"] == "loadtest-r1-0-notify"
    assert sink.purpose.startswith("a Lambda function the consumer sends effects to")
    text = render_plan(plan)
    assert "+ sink  loadtest-r1-0-notify" in text
    assert "{function:NAME} sink gets a role of its own" in text
