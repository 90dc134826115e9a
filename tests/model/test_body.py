"""Body templates, envelopes, attributes and the shape of a body (loadtest.model.scenario.body)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loadtest.errors import ScenarioError
from loadtest.model.checker.details import details_of
from loadtest.model.scenario.body import BodyShape, Decode, body_shape, describe, read
from loadtest.model.scenario.envelopes import EnvelopeKind
from loadtest.model.scenario.loading import Scenario, parse_scenario, to_raw
from loadtest.model.workload.schedule import plan


def scenario(**workload: Any) -> Scenario:
    return parse_scenario({"workload": workload}, source="test.toml")


def refusal(**workload: Any) -> str:
    with pytest.raises(ScenarioError) as caught:
        scenario(**workload)
    return str(caught.value)


TEMPLATE = {
    "eventId": "{id}",
    "quantity": "{quantity}",
    "order": {"currency": "EUR", "lines": [{"sku": "A-1", "qty": "{quantity}"}]},
    "copy": "{copy}",
    "ref": "R-{index}",
    "at": "{timestamp}",
    "trace": "{uuid}",
}


def test_a_template_renders_each_placeholder_typed_when_it_is_the_whole_value() -> None:
    s = scenario(distinct_ids=3, copies=2, body=TEMPLATE)
    messages = list(plan(s.workload, 5))
    assert len(messages) == 6
    for m in messages:
        body = json.loads(m.body)
        assert body["eventId"] == m.business_id
        assert "id" not in body  # the template puts the id where it says, nowhere else
        assert isinstance(body["quantity"], int) and 1 <= body["quantity"] <= 10
        assert body["order"] == {
            "currency": "EUR",
            "lines": [{"sku": "A-1", "qty": body["quantity"]}],
        }
        assert body["copy"] == m.copy
        assert body["ref"] == f"R-{m.index}"
        assert body["at"].endswith("Z") and body["at"].startswith("2025-")
        assert len(body["trace"]) == 36
    assert len({json.loads(m.body)["trace"] for m in messages}) == 6


def test_a_template_is_deterministic_under_the_seed() -> None:
    s = scenario(distinct_ids=4, copies=2, body=TEMPLATE, envelope="sns")
    assert [m.body for m in plan(s.workload, 9)] == [m.body for m in plan(s.workload, 9)]
    assert [m.body for m in plan(s.workload, 9)] != [m.body for m in plan(s.workload, 10)]


def test_a_template_with_the_lab_shape_sends_the_lab_bytes() -> None:
    plain = scenario(distinct_ids=5, copies=2)
    templated = scenario(distinct_ids=5, copies=2, body={"id": "{id}", "quantity": "{quantity}"})
    assert [m.body for m in plan(templated.workload, 3)] == [
        m.body for m in plan(plain.workload, 3)
    ]


def test_conflicting_resends_change_the_templates_quantity() -> None:
    s = scenario(
        distinct_ids=20,
        copies=2,
        conflict_fraction=1.0,
        body={"orderId": "{id}", "q": "{quantity}"},
    )
    by_id: dict[str, set[int]] = {}
    for m in plan(s.workload, 1):
        by_id.setdefault(str(m.business_id), set()).add(json.loads(m.body)["q"])
    assert all(len(quantities) == 2 for quantities in by_id.values())


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        ({"body": {"orderId": "order"}}, "workload.body must place the business id"),
        (
            {"body": {"orderId": "{id}", "n": "{qty}"}},
            "workload.body.n = '{qty}': unknown placeholder {qty}",
        ),
        (
            {"body": {"a": {"b": ["{id}", "{nope}"]}}},
            "workload.body.a.b[1] = '{nope}': unknown placeholder",
        ),
        ({"body": {}}, "workload.body must be a non-empty table"),
        ({"body": "{id}"}, "workload.body must be a non-empty table"),
        (
            {"body": {"orderId": "{id}"}, "conflict_fraction": 0.5},
            "workload.conflict_fraction changes a message's {quantity}, but workload.body does not place it",
        ),
        (
            {"body": {"orderId": "{id}"}, "messages": [{"body": {"id": "x"}}]},
            "give one or the other",
        ),
        (
            {"envelope": "kafka"},
            "workload.envelope = 'kafka' is not allowed; allowed: 'none', 'sns', 'eventbridge'",
        ),
        (
            {"envelope": {"type": "sns", "source": "x"}},
            "workload.envelope.source is not a field of a 'sns' envelope",
        ),
        ({"envelope": {"type": "sns", "topic_arn": "orders"}}, "is not an SNS topic ARN"),
        ({"attributes": {"AWS.trace": "x"}}, "not a valid SQS attribute name"),
        (
            {"attributes": {"n": {"type": "Number", "value": "many"}}},
            "a Number value must be a number",
        ),
        (
            {"attributes": {"b": {"type": "Binary", "value": "not base64!"}}},
            "a Binary value is given as base64",
        ),
        (
            {"attributes": {"t": "{when}"}},
            "workload.attributes.t = '{when}': unknown placeholder {when}",
        ),
        ({"attributes": {"flag": True}}, "give a string (String), a number (Number)"),
    ],
)
def test_bad_templates_envelopes_and_attributes_are_refused_naming_the_field(
    workload: dict[str, Any], expected: str
) -> None:
    message = refusal(**workload)
    assert message.startswith("test.toml: ")
    assert expected in message


def test_a_toml_date_in_a_template_is_refused() -> None:
    import datetime

    assert "a TOML date or time is not JSON" in refusal(
        body={"id": "{id}", "on": datetime.date(2025, 1, 1)}
    )


def test_the_sns_envelope_carries_the_body_as_a_json_string_in_message() -> None:
    s = scenario(
        distinct_ids=2,
        copies=1,
        body={"orderId": "{id}", "quantity": "{quantity}"},
        envelope={
            "type": "sns",
            "topic_arn": "arn:aws:sns:eu-west-1:111122223333:Orders",
            "subject": "New",
        },
        attributes={"origin": "web", "priority": 5},
    )
    m = plan(s.workload, 1)[0]
    notification = json.loads(m.body)
    assert list(notification) == [
        "Type", "MessageId", "TopicArn", "Subject", "Message", "Timestamp", "SignatureVersion",
        "Signature", "SigningCertURL", "UnsubscribeURL", "MessageAttributes",
    ]  # fmt: skip
    assert notification["Type"] == "Notification"
    assert notification["TopicArn"] == "arn:aws:sns:eu-west-1:111122223333:Orders"
    assert notification["Subject"] == "New"
    assert json.loads(notification["Message"]) == {
        "orderId": m.business_id,
        "quantity": json.loads(notification["Message"])["quantity"],
    }
    assert notification["SigningCertURL"].startswith(
        "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-"
    )
    assert notification["UnsubscribeURL"].startswith(
        "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe&SubscriptionArn=arn:aws:sns:eu-west-1:111122223333:Orders:"
    )
    assert notification["MessageAttributes"] == {
        "origin": {"Type": "String", "Value": "web"},
        "priority": {"Type": "Number", "Value": "5"},
    }
    # SNS publish attributes travel inside the notification, not as SQS attributes.
    assert m.attributes == ()


def test_an_sns_notification_without_subject_or_attributes_has_neither() -> None:
    m = plan(scenario(distinct_ids=1, copies=1, envelope="sns").workload, 1)[0]
    notification = json.loads(m.body)
    assert "Subject" not in notification and "MessageAttributes" not in notification
    assert json.loads(notification["Message"]) == {
        "id": m.business_id,
        "quantity": json.loads(notification["Message"])["quantity"],
    }


def test_the_eventbridge_envelope_carries_the_body_in_detail() -> None:
    s = scenario(
        distinct_ids=1,
        copies=1,
        body={"orderId": "{id}", "quantity": "{quantity}"},
        envelope={"type": "eventbridge", "source": "com.shop", "detail_type": "OrderPlaced"},
    )
    event = json.loads(plan(s.workload, 1)[0].body)
    assert list(event) == [
        "version",
        "id",
        "detail-type",
        "source",
        "account",
        "time",
        "region",
        "resources",
        "detail",
    ]
    assert (
        event["version"] == "0"
        and event["source"] == "com.shop"
        and event["detail-type"] == "OrderPlaced"
    )
    assert event["detail"]["orderId"] == "order-00001"
    assert event["time"].endswith("Z") and event["resources"] == []


def test_attributes_go_on_the_sqs_message_with_their_placeholders() -> None:
    blob = base64.b64encode(b"\x00\x01").decode()
    s = scenario(
        distinct_ids=1,
        copies=2,
        attributes={
            "origin": "web",
            "n": 1.5,
            "key": "K-{id}-{copy}",
            "blob": {"type": "Binary", "value": blob},
        },
    )
    first, second = plan(s.workload, 1)
    assert first.attributes == (
        ("origin", "String", "web"),
        ("n", "Number", "1.5"),
        ("key", "String", "K-order-00001-0"),
        ("blob", "Binary", blob),
    )
    assert second.attributes[2] == ("key", "String", "K-order-00001-1")
    # The body is the lab's: attributes do not change it.
    assert json.loads(first.body)["id"] == "order-00001"


def test_to_raw_round_trips_a_template_an_envelope_and_attributes() -> None:
    s = scenario(
        body=TEMPLATE,
        envelope={"type": "sns", "subject": "S"},
        attributes={"a": "x", "n": 2, "b": {"type": "Binary", "value": "AAE="}},
    )
    raw = to_raw(s)
    assert raw["workload"]["body"] == TEMPLATE
    assert raw["workload"]["envelope"] == {"type": "sns", "subject": "S"}
    assert parse_scenario(raw, source="test.toml") == s
    assert "body" not in to_raw(scenario())["workload"]


# --- the shape: where the id and the details live ----------------------------------------


def test_the_lab_shape_reads_the_id_and_the_other_fields() -> None:
    shape = body_shape(scenario().workload)
    assert shape == BodyShape()
    assert shape.business_id('{"id":"a","quantity":3}') == "a"
    assert shape.details('{"id":"a","quantity":3,"note":"x"}') == {"quantity": 3, "note": "x"}
    assert shape.business_id('{"id":3}') is None
    assert shape.business_id("not json") is None


def test_the_shape_of_a_template_in_an_sns_envelope() -> None:
    s = scenario(distinct_ids=2, copies=2, body=TEMPLATE, envelope="sns")
    shape = body_shape(s.workload)
    assert shape.id_path == ("Message", Decode.JSON, "eventId")
    assert describe(shape.id_path) == "Message(json).eventId"
    assert shape.detail_paths is not None
    assert [name for name, _ in shape.detail_paths] == ["quantity", "currency", "sku", "qty"]
    assert dict(shape.detail_paths)["sku"] == ("Message", Decode.JSON, "order", "lines", 0, "sku")
    for m in plan(s.workload, 2):
        assert shape.business_id(m.body) == m.business_id
        details = shape.details(m.body)
        assert details is not None
        # Per-message values ({copy}, {index}, {uuid}, {timestamp}) are never details: the
        # copies of an id say the same thing.
        assert set(details) == {"quantity", "currency", "sku", "qty"}
    first, second = [m for m in plan(s.workload, 2) if m.business_id == "order-00001"]
    assert details_of(first.body, shape) == details_of(second.body, shape)


def test_the_shape_of_an_eventbridge_envelope_and_of_explicit_bodies() -> None:
    shape = body_shape(
        scenario(envelope="eventbridge", messages=[{"body": {"id": "x", "q": 1}}]).workload
    )
    assert shape.id_path == ("detail", "id")
    body = '{"version":"0","detail":{"id":"x","q":1}}'
    assert shape.business_id(body) == "x"
    assert shape.details(body) == {"q": 1}


def test_an_id_inside_other_text_is_read_back() -> None:
    s = scenario(distinct_ids=1, copies=1, body={"pk": "ORDER#{id}", "quantity": "{quantity}"})
    shape = body_shape(s.workload)
    m = plan(s.workload, 1)[0]
    assert json.loads(m.body)["pk"] == "ORDER#order-00001"
    assert shape.business_id(m.body) == "order-00001"
    assert shape.business_id('{"pk":"CUSTOMER#1"}') is None


def test_the_first_whole_id_value_is_the_business_ids_place() -> None:
    shape = body_shape(scenario(body={"ref": "ORDER#{id}", "meta": {"orderId": "{id}"}}).workload)
    assert shape.id_path == ("meta", "orderId") and shape.id_pattern is None


def test_details_with_the_same_name_are_named_by_their_path() -> None:
    shape = body_shape(
        scenario(body={"id": "{id}", "a": {"n": 1}, "b": {"n": "{quantity}"}}).workload
    )
    assert shape.detail_paths is not None
    assert [name for name, _ in shape.detail_paths] == ["a.n", "b.n"]


def test_read_follows_keys_indexes_and_json_strings() -> None:
    value = {"Message": json.dumps({"items": [{"id": "x"}]})}
    assert read(value, ("Message", Decode.JSON, "items", 0, "id")) == "x"
    assert read(value, ("Message", Decode.JSON, "items", 1, "id")) is None
    assert read(value, ("Message", "items")) is None
    assert read({"Message": "not json"}, ("Message", Decode.JSON, "id")) is None


def test_envelope_kinds_are_the_documented_ones() -> None:
    assert [k.value for k in EnvelopeKind] == ["none", "sns", "eventbridge"]


_KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ_-", min_size=1, max_size=6)
_LITERALS = st.one_of(
    st.integers(-5, 5),
    st.booleans(),
    st.text(alphabet="xyz #:/", max_size=5),
    st.sampled_from(["{copy}", "{uuid}", "{quantity}", "n-{index}"]),
)
_TEMPLATES = st.recursive(
    _LITERALS,
    lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=3),
        st.dictionaries(_KEYS, inner, min_size=1, max_size=3),
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    template=st.dictionaries(_KEYS, _TEMPLATES, min_size=1, max_size=4),
    where=st.lists(_KEYS, min_size=1, max_size=3),
    envelope=st.sampled_from(["none", "sns", "eventbridge"]),
    prefix=st.sampled_from(["", "ORDER#"]),
)
def test_the_shape_reads_back_the_business_id_of_every_rendered_message(
    template: dict[str, Any], where: list[str], envelope: str, prefix: str
) -> None:
    # Put {id} at a nested place of an arbitrary template; whatever else it holds, the shape
    # finds each message's business id where the template put it.
    node: dict[str, Any] = template
    for key in where[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = node[key] = {}
        node = child
    node[where[-1]] = f"{prefix}{{id}}"
    s = scenario(distinct_ids=3, copies=2, body=template, envelope=envelope)
    shape = body_shape(s.workload)
    for m in plan(s.workload, 1):
        assert shape.business_id(m.body) == m.business_id


def test_an_sns_notification_is_written_as_sns_writes_it() -> None:
    s = scenario(
        distinct_ids=1,
        copies=1,
        body={"orderId": "{id}", "note": 'a "quoted" é'},
        envelope={"type": "sns", "subject": 'say "hi"'},
        attributes={"origin": 'w"eb', "n": 3},
    )
    text = plan(s.workload, 1)[0].body
    assert text == json.dumps(json.loads(text), indent=2, separators=(",", " : "))
    assert text.startswith('{\n  "Type" : "Notification",\n  "MessageId" : "')
