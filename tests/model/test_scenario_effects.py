"""``[[effects]]``: parsed, validated against the sinks the environment creates, and where an
entry finds a business id."""

from __future__ import annotations

import json
from typing import Any

import pytest

from loadtest.errors import ScenarioError
from loadtest.model.history.log import EffectKind
from loadtest.model.scenario.effects import (
    Delivery,
    EffectRule,
    parse_effects,
    sink_labels,
)
from loadtest.model.scenario.loading import parse_text

ENV = (
    ("ORDERS_TOPIC", "{topic:orders}"),
    ("RECEIPTS", "s3://{bucket:receipts}/x"),
    ("EVENTS", "{bus:events}"),
    ("OUT", "{queue_url:outbox}"),
    ("OUT_ARN", "{queue_arn:outbox}"),
    ("FLOW", "{state_machine:flow}"),
    ("DYNAMODB_TABLE", "{table}"),
)


def parse(entries: list[dict[str, Any]]) -> tuple[EffectRule, ...]:
    return parse_effects(entries, ENV, "s.toml")


def test_the_environment_s_placeholders_name_the_sinks() -> None:
    assert sink_labels(ENV) == {
        "orders": EffectKind.TOPIC,
        "receipts": EffectKind.BUCKET,
        "events": EffectKind.BUS,
        "outbox": EffectKind.QUEUE,
        "flow": EffectKind.STATE_MACHINE,
    }


def test_entries_parse_with_their_defaults() -> None:
    orders, receipts = parse(
        [
            {"sink": "orders", "id": "detail.orderId", "required": True},
            {"sink": "receipts", "id": "key", "delivery": "at-least-once"},
        ]
    )
    assert orders == EffectRule("orders", EffectKind.TOPIC, id="detail.orderId", required=True)
    assert receipts.delivery is Delivery.AT_LEAST_ONCE
    assert receipts.kind is EffectKind.BUCKET
    assert parse_effects([orders.to_raw(), receipts.to_raw()], ENV, "again") == (
        orders,
        receipts,
    )
    assert parse_effects(None, ENV, "s.toml") == ()


def test_a_sink_the_run_does_not_create_is_refused_naming_the_labels() -> None:
    with pytest.raises(ScenarioError) as info:
        parse([{"sink": "shipments"}])
    text = str(info.value)
    assert text.startswith("s.toml: effects[0].sink = 'shipments'")
    assert "'orders' (topic)" in text and "'receipts' (bucket)" in text


def test_a_scenario_without_sinks_refuses_an_effects_entry() -> None:
    toml = '[workload]\ndistinct_ids = 1\n[[effects]]\nsink = "orders"\n'
    with pytest.raises(ScenarioError) as info:
        parse_text(toml, "shop.toml")
    assert "shop.toml: effects[0].sink = 'orders' is not a sink the run creates" in str(info.value)
    assert "creates no sink" in str(info.value)


def test_unknown_keys_are_refused_listing_the_allowed() -> None:
    with pytest.raises(ScenarioError) as info:
        parse([{"sink": "orders", "idempotent": True}])
    assert str(info.value) == (
        "s.toml: unknown key effects[0].idempotent; allowed: content_based_deduplication, "
        "delivery, id, id_attribute, id_pattern, required, sink"
    )


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"sink": "orders", "required": True}, "is required but says no way to find"),
        ({"sink": "orders", "id": "key"}, "id = \"key\", but 'orders' is a topic"),
        ({"sink": "orders", "id": "a..b"}, "is not a dotted path"),
        ({"sink": "orders", "id_pattern": "("}, "is not a regular expression"),
        ({"sink": "orders", "delivery": "twice"}, "allowed: exactly-once, at-least-once, any"),
        (
            {"sink": "orders", "id": "orderId", "required": True, "delivery": "any"},
            'required but delivery = "any" judges none',
        ),
        ({"sink": "orders", "required": "yes"}, "required must be true or false"),
        ({"sink": 3}, "must name a sink by its label"),
        ({"sink": "receipts", "id_attribute": "orderId"}, "is a bucket, whose entries carry no"),
        ({"sink": "orders", "id": "orderId", "id_attribute": "orderId"}, "give one"),
        ({"sink": "orders", "id_attribute": 3}, "id_attribute must be a string"),
        (
            {"sink": "orders", "content_based_deduplication": True},
            "'orders' is not a FIFO topic or queue",
        ),
        (
            {"sink": "receipts", "content_based_deduplication": True},
            "'receipts' is not a FIFO topic or queue",
        ),
        (
            {"sink": "orders", "content_based_deduplication": "yes"},
            "content_based_deduplication must be true or false",
        ),
    ],
)
def test_invalid_entries_are_refused(entry: dict[str, Any], words: str) -> None:
    with pytest.raises(ScenarioError, match=r"^s\.toml: effects") as info:
        parse([entry])
    assert words in str(info.value)


def test_a_required_keyed_sink_finds_its_ids_in_the_key() -> None:
    (rule,) = parse([{"sink": "receipts", "required": True}])
    assert rule.required


def test_an_entry_naming_a_label_two_kinds_of_sink_share_is_refused() -> None:
    environment = (
        ("ORDERS_TOPIC_ARN", "{topic:orders}"),
        ("ORDERS_QUEUE_URL", "{queue_url:orders}"),
    )
    # Without an entry, the two are two sinks: nothing is refused.
    assert parse_effects(None, environment, "s.toml") == ()
    with pytest.raises(ScenarioError) as info:
        parse_effects([{"sink": "orders", "required": True}], environment, "s.toml")
    assert str(info.value) == (
        "s.toml: effects[0].sink = 'orders' names a topic and a queue in [consumer] "
        "environment, so which one this entry is for is not said; give them different NAMEs "
        '(e.g. "{queue_url:orders-queue}")'
    )


def test_one_entry_per_sink() -> None:
    with pytest.raises(ScenarioError, match="named by an earlier"):
        parse([{"sink": "orders"}, {"sink": "orders", "id": "orderId"}])


def test_an_entry_finds_the_id_by_path_key_or_pattern() -> None:
    body = {"detail": json.dumps({"orderId": "o-1", "items": [{"id": "i-9"}]})}
    by_path = EffectRule("orders", EffectKind.TOPIC, id="detail.orderId")
    assert by_path.id_of(body, json.dumps(body), "") == "o-1"
    assert (
        EffectRule("orders", EffectKind.TOPIC, id="detail.items[0].id").id_of(body, "", "") == "i-9"
    )
    assert EffectRule("orders", EffectKind.TOPIC, id="detail.missing").id_of(body, "", "") is None
    by_key = EffectRule(
        "receipts", EffectKind.BUCKET, id="key", id_pattern=r"orders/(?P<id>[^/]+)\.json"
    )
    assert by_key.id_of(None, "bytes", "orders/o-7.json") == "o-7"
    assert by_key.id_of(None, "bytes", "other/o-7") is None
    in_text = EffectRule("outbox", EffectKind.QUEUE, id_pattern=r"order (\S+) done")
    assert in_text.id_of(None, "order o-3 done", "") == "o-3"


def test_an_entry_finds_the_id_in_a_message_attribute() -> None:
    (rule,) = parse([{"sink": "orders", "id_attribute": "orderId", "required": True}])
    attributes = (("eventType", "OrderPlaced"), ("orderId", "o-4"))
    assert rule.id_of(None, "order placed", "", attributes) == "o-4"
    assert rule.id_of(None, "order placed", "", ()) is None
    by_pattern = EffectRule(
        "orders", EffectKind.TOPIC, id_attribute="ref", id_pattern=r"ORDER#(.+)"
    )
    assert by_pattern.id_of(None, "", "", (("ref", "ORDER#o-5"),)) == "o-5"
    assert rule.to_raw() == {"sink": "orders", "id_attribute": "orderId", "required": True}


def test_to_raw_carries_the_entries_only_when_declared() -> None:
    from loadtest.model.scenario.loading import to_raw

    plain = parse_text("[workload]\ndistinct_ids = 1\n", "s.toml")
    assert "effects" not in to_raw(plain)


def test_a_fifo_sink_declared_deduplicating_by_content_is_made_so() -> None:
    toml = (
        "[workload]\ndistinct_ids = 1\n"
        '[consumer]\nenvironment = { OUT = "{queue_url:out.fifo}", '
        'NEWS = "{topic:news.fifo}", ORDERS = "{topic:orders}" }\n'
        '[[effects]]\nsink = "out.fifo"\ncontent_based_deduplication = true\n'
    )
    scenario = parse_text(toml, "s.toml")
    (rule,) = scenario.effects
    assert rule.content_based_deduplication
    assert parse_effects([rule.to_raw()], scenario.function.environment, "again") == (rule,)
    assert [(s.name, s.content_deduplication) for s in scenario.sinks] == [
        ("out.fifo", True),
        ("news.fifo", False),
        ("orders", False),
    ]
    assert scenario.sinks[0].deduplicated == (
        "deduplication id, or the body's SHA-256, within 5 minutes"
    )
