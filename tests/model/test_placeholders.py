"""loadtest.model.scenario.placeholders: the sinks a scenario names, the rules for their NAME,
the names a run gives them, and the placeholder a variable's name suggests."""

from __future__ import annotations

from typing import Any

import pytest

from loadtest.errors import ScenarioError
from loadtest.model.history.records import EffectKind
from loadtest.model.scenario.function_config import RunResources, render
from loadtest.model.scenario.loading import parse_scenario
from loadtest.model.scenario.placeholders import (
    PREFIX_MAX,
    Sink,
    label_limit,
    sink_of,
    suggested_value,
)


def parse(environment: dict[str, Any]) -> Any:
    return parse_scenario(
        {"workload": {"distinct_ids": 1}, "consumer": {"environment": environment}},
        source="s.toml",
    )


def test_the_variables_name_each_sink_once_in_order_of_first_mention() -> None:
    scenario = parse(
        {
            "ORDERS_TOPIC_ARN": "{topic:orders}",
            "OUTBOX_URL": "{queue_url:outbox.fifo}",
            "OUTBOX_ARN": "{queue_arn:outbox.fifo}",
            "BUS": "{bus:events}",
            "BOTH": "{bucket:receipts}/{state_machine:ship}",
            "TABLE": "{table}",
        }
    )
    assert scenario.function.sinks == (
        Sink(EffectKind.TOPIC, "orders"),
        Sink(EffectKind.QUEUE, "outbox.fifo"),
        Sink(EffectKind.BUS, "events"),
        Sink(EffectKind.BUCKET, "receipts"),
        Sink(EffectKind.STATE_MACHINE, "ship"),
    )
    assert [s.fifo for s in scenario.function.sinks] == [False, True, False, False, False]
    assert parse({"T": "{table}"}).function.sinks == ()


def test_a_command_line_sink_counts_as_the_files_do() -> None:
    scenario = parse({}).with_environment(["ARN={topic:t.fifo}"])
    assert scenario.function.sinks == (Sink(EffectKind.TOPIC, "t.fifo"),)


def test_each_sink_placeholder_renders_what_the_run_made() -> None:
    resources = RunResources(
        table="t",
        queue_url="u",
        queue_arn="a",
        queue_name="q",
        dlq_url="d",
        region="r",
        sinks={
            "topic:orders": "arn:topic",
            "topic_name:orders": "topic",
            "queue_url:x": "http://x",
            "queue_arn:x": "arn:x",
            "queue_name:x": "x",
        },
    )
    scenario = parse(
        {
            "A": "{topic:orders} {topic_name:orders}",
            "B": "{queue_url:x} {queue_arn:x} {queue_name:x}",
            "C": "{table}",
        }
    )
    assert render(scenario.function, resources) == {
        "A": "arn:topic topic",
        "B": "http://x arn:x x",
        "C": "t",
    }


def test_resource_names_come_from_the_prefix_and_never_share_a_queue_name() -> None:
    prefix = "loadtest-1a2b3c4d-0"
    topic = Sink(EffectKind.TOPIC, "orders")
    queue = Sink(EffectKind.QUEUE, "orders")
    bus = Sink(EffectKind.BUS, "orders")
    function = Sink(EffectKind.FUNCTION, "orders")
    assert topic.resource_name(prefix) == "loadtest-1a2b3c4d-0-orders"
    assert queue.resource_name(prefix) == "loadtest-1a2b3c4d-0-q-orders"
    assert function.resource_name(prefix) == "loadtest-1a2b3c4d-0-orders"
    assert {
        topic.capture_name(prefix),
        bus.capture_name(prefix),
        function.capture_name(prefix),
        queue.resource_name(prefix),
    } == {
        "loadtest-1a2b3c4d-0-t-orders",
        "loadtest-1a2b3c4d-0-e-orders",
        "loadtest-1a2b3c4d-0-f-orders",
        "loadtest-1a2b3c4d-0-q-orders",
    }
    assert Sink(EffectKind.TOPIC, "o.fifo").capture_name(prefix).endswith("-t-o.fifo")
    with pytest.raises(ValueError, match="longer than 25"):
        topic.resource_name("x" * (PREFIX_MAX + 1))


@pytest.mark.parametrize(
    "kind", [k for k in EffectKind if k not in (EffectKind.SOURCE, EffectKind.DEAD_LETTER)]
)
def test_the_longest_name_allowed_fits_the_services_limit(kind: EffectKind) -> None:
    longest = Sink(kind, "a" * label_limit(kind))
    prefix = "p" * PREFIX_MAX
    # A function's resource name is also its role's (IAM: 64).
    service_limit = {EffectKind.BUCKET: 63, EffectKind.FUNCTION: 64}.get(kind, 80)
    assert len(longest.resource_name(prefix)) <= service_limit
    if kind in (EffectKind.TOPIC, EffectKind.BUS, EffectKind.FUNCTION):
        assert len(longest.capture_name(prefix)) <= 80  # an SQS queue
    with pytest.raises(ValueError, match=f"1 to {label_limit(kind)} "):
        sink_of(f"{longest.placeholders[0]}a")


def test_a_sinks_role_is_its_resource_name_held_to_iams_64_characters() -> None:
    prefix = "p" * PREFIX_MAX
    function = Sink(EffectKind.FUNCTION, "a" * label_limit(EffectKind.FUNCTION))
    assert function.role_name(prefix) == function.resource_name(prefix)
    short = Sink(EffectKind.STATE_MACHINE, "ship")
    assert short.role_name("loadtest-r1-0") == "loadtest-r1-0-ship"
    longest = label_limit(EffectKind.STATE_MACHINE)
    one, other = (Sink(EffectKind.STATE_MACHINE, c * longest) for c in "ab")
    roles = [one.role_name(prefix), other.role_name(prefix), one.role_name(prefix)]
    assert [len(r) for r in roles] == [64, 64, 64]
    assert roles[0] == roles[2] and roles[0] != roles[1]
    assert roles[0].startswith(one.resource_name(prefix)[:55])


def test_the_deduplication_each_sink_does_by_itself_is_said_in_words() -> None:
    assert [
        Sink(kind, name).deduplicated
        for kind, name in [
            (EffectKind.TOPIC, "t"),
            (EffectKind.TOPIC, "t.fifo"),
            (EffectKind.QUEUE, "q.fifo"),
            (EffectKind.BUS, "b"),
            (EffectKind.BUCKET, "b"),
            (EffectKind.STATE_MACHINE, "m"),
        ]
    ] == [
        "",
        "deduplication id within 5 minutes",
        "deduplication id within 5 minutes",
        "",
        "one object per key",
        "execution names are unique",
    ]


WORDS = "letters, digits, '-' or '_'"
NAMED = "the run names it loadtest-<run>-<variant>-NAME"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "{topic:bad name}",
            "s.toml: consumer.environment.V = '{topic:bad name}': {topic:bad name} is not an SNS "
            f"topic a run can make: NAME allows 1 to 52 {WORDS}, ending '.fifo' (counted) for a "
            f"FIFO topic; {NAMED}",
        ),
        (
            "{queue_url:}",
            "s.toml: consumer.environment.V = '{queue_url:}': {queue_url:} is not an SQS queue a "
            f"run can make: NAME allows 1 to 52 {WORDS}, ending '.fifo' (counted) for a FIFO "
            f"queue; {NAMED}",
        ),
        (
            "{queue_arn:" + "q" * 53 + "}",
            "s.toml: consumer.environment.V = '{queue_arn:"
            + "q" * 53
            + "}': {queue_arn:"
            + "q" * 53
            + "} is not an SQS queue a run can make: NAME allows 1 to 52 "
            f"{WORDS}, ending '.fifo' (counted) for a FIFO queue; {NAMED}",
        ),
        (
            "{bus:events.fifo}",
            "s.toml: consumer.environment.V = '{bus:events.fifo}': {bus:events.fifo} is not an "
            f"EventBridge bus a run can make: NAME allows 1 to 52 {WORDS}; {NAMED}",
        ),
        (
            "{bucket:Receipts}",
            "s.toml: consumer.environment.V = '{bucket:Receipts}': {bucket:Receipts} is not an S3 "
            "bucket a run can make: NAME allows 1 to 37 lowercase letters, digits, '-' or '.', "
            f"starting and ending with a letter or digit, no '..'; {NAMED}",
        ),
        (
            "{bucket:a..b}",
            "s.toml: consumer.environment.V = '{bucket:a..b}': {bucket:a..b} is not an S3 "
            "bucket a run can make: NAME allows 1 to 37 lowercase letters, digits, '-' or '.', "
            f"starting and ending with a letter or digit, no '..'; {NAMED}",
        ),
        (
            "{state_machine:ship it}",
            "s.toml: consumer.environment.V = '{state_machine:ship it}': {state_machine:ship it} "
            f"is not a Step Functions state machine a run can make: NAME allows 1 to 54 {WORDS}; "
            f"{NAMED}",
        ),
        (
            "arn:{queue_url}:{queue_arn:outbox",
            "s.toml: consumer.environment.V = 'arn:{queue_url}:{queue_arn:outbox': the "
            "placeholder at '{queue_arn:outbox' has no closing '}'; allowed: {table}, "
            "{queue_url}, {queue_arn}, {queue_name}, {dlq_url}, {region}, {topic:NAME}, "
            "{topic_name:NAME}, {queue_url:NAME}, {queue_arn:NAME}, {queue_name:NAME}, "
            "{bus:NAME}, {bucket:NAME}, {state_machine:NAME}, {function:NAME}",
        ),
        (
            "{topics:orders}",
            "s.toml: consumer.environment.V = '{topics:orders}': unknown placeholder "
            "{topics:orders}; allowed: {table}, {queue_url}, {queue_arn}, {queue_name}, {dlq_url}, {region}, "
            "{topic:NAME}, {topic_name:NAME}, {queue_url:NAME}, {queue_arn:NAME}, {queue_name:NAME}, {bus:NAME}, {bucket:NAME}, "
            "{state_machine:NAME}, {function:NAME}",
        ),
    ],
)
def test_a_bad_sink_is_refused_naming_file_field_value_and_what_is_allowed(
    value: str, message: str
) -> None:
    with pytest.raises(ScenarioError) as info:
        parse({"V": value})
    assert str(info.value) == message


def test_a_bad_command_line_sink_is_refused_naming_the_option() -> None:
    with pytest.raises(ScenarioError) as info:
        parse({}).with_environment(["V={bus:a b}"])
    assert str(info.value) == (
        "--env V = '{bus:a b}': {bus:a b} is not an EventBridge bus a run can make: NAME "
        f"allows 1 to 52 {WORDS}; {NAMED}"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DYNAMODB_TABLE", "{table}"),
        ("DYNAMODB_NAME", "{table}"),
        ("IDEMPOTENCY_TABLE", "{table:idempotency}"),
        ("QUEUE_URL", "{queue_url}"),
        ("JOBS_QUEUE_URL", "{queue_url}"),
        ("SOURCE_QUEUE_ARN", "{queue_arn}"),
        ("QUEUE_NAME", "{queue_name}"),
        ("NOTIFY_QUEUE_URL", "{queue_url:notify}"),
        ("NOTIFY_QUEUE_NAME", "{queue_name:notify}"),
        ("OUTBOX_FIFO_QUEUE_ARN", "{queue_arn:outbox.fifo}"),
        ("DLQ_URL", "{dlq_url}"),
        ("DEADLETTER_QUEUE_URL", "{dlq_url}"),
        ("ORDERS_TOPIC_ARN", "{topic:orders}"),
        ("TOPIC_ARN", "{topic:topic}"),
        ("ORDERS_TOPIC_NAME", "{topic_name:orders}"),
        ("EVENT_BUS_NAME", "{bus:events}"),
        ("ORDERS_EVENT_BUS", "{bus:orders}"),
        ("RECEIPTS_BUCKET", "{bucket:receipts}"),
        ("STATE_MACHINE_ARN", "{state_machine:workflow}"),
        ("SHIPPING_STATE_MACHINE_ARN", "{state_machine:shipping}"),
        ("STEP_FUNCTION_ARN", "{state_machine:workflow}"),
        ("NOTIFY_FUNCTION", "{function:notify}"),
        ("NOTIFY_FUNCTION_NAME", "{function:notify}"),
        ("BILLING_FUNCTION_ARN", "{function:billing}"),
        ("AUDIT_LAMBDA", "{function:audit}"),
        ("FUNCTION_NAME", "{function:function}"),
        ("AWS_REGION", "{region}"),
        ("LOG_LEVEL", None),
    ],
)
def test_a_variables_name_suggests_the_placeholder_of_what_it_names(
    name: str, value: str | None
) -> None:
    assert suggested_value(name) == value
    if value is not None and ":" in value and not value.startswith("{table:"):
        parse({name: value})  # every suggestion is a placeholder the scenario accepts
