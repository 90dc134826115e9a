"""What `loadtest new` reads from a handler's source and a sample message (loadtest.model.advice.handler_source, loadtest.model.advice.scaffold.writer)."""

from __future__ import annotations

import json
import tomllib
from typing import Any

import pytest

from loadtest.errors import InputError
from loadtest.model.advice.handler_source import (
    environment_reads,
    hardcoded_tables,
    id_attribute,
    suggested_value,
)
from loadtest.model.advice.scaffold.writer import sample_template, scenario_text, toml_value
from loadtest.model.scenario.body import body_shape
from loadtest.model.scenario.envelopes import EnvelopeKind
from loadtest.model.scenario.loading import parse_scenario
from loadtest.model.workload.schedule import plan

SOURCE = """
import os
from os import environ, getenv

TABLE_VAR = "DYNAMODB_TABLE"
table = boto3.resource("dynamodb").Table(os.environ[TABLE_VAR])
queue = os.getenv("OUTBOX_QUEUE_URL", "")
level = os.environ.get("LOG_LEVEL", "INFO")
idem = environ["IDEMPOTENCY_TABLE"]
region = getenv("AWS_REGION")
again = os.environ["DYNAMODB_TABLE"]
computed = os.environ["PREFIX_" + level]

def handler(event, context):
    boto3.client("dynamodb").put_item(TableName="Orders", Item={})
    os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "orders")
"""


def test_the_environment_variables_a_source_reads_in_order() -> None:
    assert environment_reads(SOURCE) == [
        "DYNAMODB_TABLE",
        "OUTBOX_QUEUE_URL",
        "LOG_LEVEL",
        "IDEMPOTENCY_TABLE",
        "AWS_REGION",
        "POWERTOOLS_SERVICE_NAME",
    ]


def test_hard_coded_table_names() -> None:
    assert hardcoded_tables(SOURCE) == ["Orders"]
    assert hardcoded_tables('t = dynamodb.Table("Orders")\nt2 = dynamodb.Table(name)') == ["Orders"]


def test_a_source_that_is_not_python_is_bad_input() -> None:
    with pytest.raises(InputError, match=r"app.py: not valid Python"):
        environment_reads("def (:", "app.py")


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DYNAMODB_TABLE", "{table}"),
        ("dynamo_db_name", "{table}"),
        ("ORDERS_TABLE_NAME", "{table}"),
        ("IDEMPOTENCY_TABLE", "{table:idempotency}"),
        ("QUEUE_URL", "{queue_url}"),
        ("SOURCE_QUEUE_ARN", "{queue_arn}"),
        ("DLQ_URL", "{dlq_url}"),
        ("AWS_REGION", "{region}"),
        ("LOG_LEVEL", None),
    ],
)
def test_a_variables_name_suggests_a_run_resource(name: str, value: str | None) -> None:
    assert suggested_value(name) == value


SNS_SAMPLE = {
    "Type": "Notification",
    "MessageId": "63a3f6b6-d533-4a47-aef9-fcf5cf758c76",
    "TopicArn": "arn:aws:sns:us-west-2:123456789012:MyTopic",
    "Message": json.dumps(
        {
            "orderId": "o-1",
            "lines": [{"sku": "A", "quantity": 2}],
            "placedAt": "2024-05-01T10:00:00Z",
            "eventId": "3f2a1b9e-1111-4222-8333-444455556666",
            "note": None,
        }
    ),
    "Timestamp": "2017-03-29T05:12:16.901Z",
    "MessageAttributes": {"origin": {"Type": "String", "Value": "web"}},
}


def test_an_sns_sample_gives_the_envelope_and_a_template_of_its_message() -> None:
    sample = sample_template(SNS_SAMPLE, "orderId", "sample.json")
    assert sample.envelope is EnvelopeKind.SNS
    assert sample.envelope_fields == {"topic_arn": "arn:aws:sns:us-west-2:123456789012:MyTopic"}
    assert sample.attributes == {"origin": "web"}
    assert sample.template == {
        "orderId": "{id}",
        "lines": [{"sku": "A", "quantity": "{quantity}"}],
        "placedAt": "{timestamp}",
        "eventId": "{uuid}",
    }
    assert any("note is null" in note for note in sample.notes)


def test_an_eventbridge_sample_and_a_nested_id_field() -> None:
    event = {
        "version": "0",
        "id": "x",
        "detail-type": "OrderPlaced",
        "source": "com.shop",
        "account": "111122223333",
        "region": "eu-west-1",
        "resources": [],
        "time": "2024-05-01T10:00:00Z",
        "detail": {"order": {"id": "o-1", "qty": 3}},
    }
    sample = sample_template(event, "order.id", "event.json")
    assert sample.envelope is EnvelopeKind.EVENTBRIDGE
    assert sample.envelope_fields["detail_type"] == "OrderPlaced"
    assert sample.template == {"order": {"id": "{id}", "qty": "{quantity}"}}
    assert sample.id_path == "order.id" and sample.id_key == "id"


def test_a_dotted_id_field_names_a_lists_element_by_its_index() -> None:
    body = {"lines": [{"sku": "A"}, {"sku": "B", "ref": "r-1"}]}
    sample = sample_template(body, "lines.1.ref", "body.json")
    assert sample.template == {"lines": [{"sku": "A"}, {"sku": "B", "ref": "{id}"}]}
    for outside in ("lines.2.ref", "lines.x.ref", "lines.-1.ref"):
        with pytest.raises(InputError, match="is not a field of the message body"):
            sample_template(body, outside, "body.json")


def test_a_lambda_sqs_event_sample_uses_its_first_records_body() -> None:
    event = {
        "Records": [
            {
                "messageId": "m",
                "body": json.dumps({"eventId": "e-1", "amount": 5}),
                "messageAttributes": {"src": {"stringValue": "app", "dataType": "String"}},
            }
        ]
    }
    sample = sample_template(event, None, "event.json")
    assert sample.template == {"eventId": "{id}", "amount": 5}
    assert sample.attributes == {"src": "app"}
    assert any("guessed to be 'eventId'" in note for note in sample.notes)


@pytest.mark.parametrize(
    ("message", "id_field", "expected"),
    [
        ({"a": 1}, None, "no field looks like the business id"),
        ({"a": 1}, "orderId", "--id-field 'orderId' is not a field of the message body"),
        ([1, 2], None, "the message body is not a JSON object"),
        ({"Type": "Notification", "Message": "plain text"}, None, "whose Message is not JSON"),
    ],
)
def test_bad_samples_are_refused_with_what_to_do(
    message: Any, id_field: str | None, expected: str
) -> None:
    with pytest.raises(InputError, match=expected):
        sample_template(message, id_field, "sample.json")


def test_the_written_scenario_parses_and_carries_the_id_where_the_sample_did() -> None:
    sample = sample_template(SNS_SAMPLE, "orderId", "sample.json")
    text = scenario_text(
        "app.py:handler", sample, "sample.json", environment_reads(SOURCE), tables=["Orders"]
    )
    raw = tomllib.loads(text)
    # The run's resources where a name suggests one; others stay comments to fill in.
    assert raw["consumer"]["environment"] == {
        "DYNAMODB_TABLE": "{table}",
        "OUTBOX_QUEUE_URL": "{queue_url:outbox}",
    }
    assert '# LOG_LEVEL = "..."' in text
    assert "# AWS_REGION: already set in every execution environment" in text
    assert raw["table"] == {"name": "Orders"}
    assert raw["tables"] == [{"env": "IDEMPOTENCY_TABLE", "key": {"id": "S"}}]
    scenario = parse_scenario(raw, source="new.toml")
    assert scenario.variants == ("app.py:handler",)
    assert scenario.workload.envelope.kind is EnvelopeKind.SNS
    assert scenario.outcome.templates == (("orderId", "{id}"),)
    shape = body_shape(scenario.workload)
    for m in plan(scenario.workload, scenario.seed)[:4]:
        assert shape.business_id(m.body) == m.business_id
    assert scenario.function.table_name == "Orders"
    assert [t.env for t in scenario.function.tables] == ["IDEMPOTENCY_TABLE"]
    assert [(s.kind.value, s.name) for s in scenario.function.sinks] == [("queue", "outbox")]
    assert "# a sink the run creates for the handler's effects, reads back and deletes." in text
    only_comments = tomllib.loads(scenario_text("app.py:handler", sample, None, ["LOG_LEVEL"]))
    assert "environment" not in only_comments["consumer"]


@pytest.mark.parametrize(
    ("names", "outcome", "others"),
    [
        (["TABLE_NAME", "STOCK_TABLE"], None, ["STOCK_TABLE"]),
        (["ORDERS_TABLE", "STOCK_TABLE"], "ORDERS_TABLE", ["STOCK_TABLE"]),
        (["ORDERS_TABLE"], "ORDERS_TABLE", []),
    ],
)
def test_a_second_table_variable_names_a_table_of_its_own(
    names: list[str], outcome: str | None, others: list[str]
) -> None:
    # Two variables both pointed at the run's one table would have the handler's calls on
    # the second refused for its key: each further table variable gets a table of its own.
    raw = tomllib.loads(scenario_text("app.py:handler", None, None, names))
    given = raw["consumer"].get("environment", {})
    assert given == ({outcome: "{table}"} if outcome else {})
    assert [t["env"] for t in raw.get("tables", [])] == others
    parse_scenario(raw, source="new.toml")


def test_without_a_sample_the_lab_body_stays() -> None:
    raw = tomllib.loads(scenario_text("consumer.conditional:handler", None, None, []))
    scenario = parse_scenario(raw, source="new.toml")
    assert scenario.workload.body is None and scenario.outcome.templates == (("id", "{id}"),)


def test_toml_values_round_trip() -> None:
    value = {"a b": 'x"y\n', "n": [1, 2.5, True], "m": {}, "u": "é"}
    assert tomllib.loads(f"v = {toml_value(value)}")["v"] == value


def test_a_partial_batch_response_is_recognised() -> None:
    from loadtest.model.advice.handler_source import reports_item_failures

    powertools = (
        "from aws_lambda_powertools.utilities.batch import BatchProcessor, process_partial_response\n"
        "processor = BatchProcessor(event_type=EventType.SQS)\n"
    )
    assert reports_item_failures(powertools)
    assert reports_item_failures('def handler(e, c):\n    return {"batchItemFailures": []}\n')
    assert not reports_item_failures(SOURCE)
    text = scenario_text("app.py:handler", None, None, [], item_failures=True)
    assert tomllib.loads(text)["consumer"]["report_batch_item_failures"] is True


def test_the_written_scenario_shuffles_copies_so_they_can_race() -> None:
    raw = tomllib.loads(scenario_text("consumer.conditional:handler", None, None, []))
    assert raw["workload"]["order"] == "shuffled" and raw["workload"]["copies"] == 2


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('t.put_item(Item={"id": order["orderId"], "total": order["total"]})', "id"),
        ('t.get_item(Key={"pk": order.get("orderId")})', "pk"),
        ('c.put_item(TableName=T, Item={"order_id": {"S": body["orderId"]}})', "order_id"),
        # Stored under its own name, computed, or not written from a literal: nothing to say.
        ('t.put_item(Item={"orderId": order["orderId"]})', "orderId"),
        ('t.put_item(Item={"pk": f"ORDER#{order[\'orderId\']}"})', None),
        ("t.put_item(Item=order)", None),
        ('t.put_item(Item={"id": order["customerId"]})', None),
    ],
)
def test_the_attribute_a_source_stores_the_business_id_under(
    source: str, expected: str | None
) -> None:
    assert id_attribute(source, "orderId") == expected


def test_the_outcome_key_is_where_the_handler_stores_the_id_not_the_samples_name() -> None:
    sample = sample_template(SNS_SAMPLE, "orderId", "sample.json")
    text = scenario_text("app.py:handler", sample, "sample.json", [], stored_as="id")
    assert "# The handler's source stores orderId as id." in text
    scenario = parse_scenario(tomllib.loads(text), source="new.toml")
    assert scenario.outcome.templates == (("id", "{id}"),)
    # The body keeps the sample's field: only the table's key follows the handler.
    assert tomllib.loads(text)["workload"]["body"]["orderId"] == "{id}"
    same = scenario_text("app.py:handler", sample, "sample.json", [], stored_as="orderId")
    assert "The handler's source stores" not in same
    assert parse_scenario(tomllib.loads(same), source="n.toml").outcome.templates == (
        ("orderId", "{id}"),
    )


def test_the_settings_a_run_warns_about_are_written_for_the_user_to_set() -> None:
    # Lint judges the function timeout, the visibility timeout and maxReceiveCount: the
    # scenario names each, at the value a run would otherwise take silently.
    text = scenario_text("app.py:handler", None, None, [])
    consumer = tomllib.loads(text)["consumer"]
    assert (
        consumer["function_timeout_s"],
        consumer["visibility_timeout_s"],
        consumer["max_receive_count"],
    ) == (30, 30, 3)
    defaults = parse_scenario({}, source="empty.toml").consumer
    scenario = parse_scenario(tomllib.loads(text), source="new.toml").consumer
    assert (
        scenario.function_timeout_s,
        scenario.visibility_timeout_s,
        scenario.max_receive_count,
    ) == (defaults.function_timeout_s, defaults.visibility_timeout_s, defaults.max_receive_count)
