"""The effects judge: what a consumer sends beyond its table, on hand-built histories."""

from __future__ import annotations

import dataclasses
import itertools
import json

from loadtest.model.checker import Check, Verdict, check
from loadtest.model.checker.effects import SinkEffects
from loadtest.model.history.log import (
    Ack,
    EffectKind,
    EffectRecord,
    EndState,
    History,
    Invocation,
    InvocationOutcome,
    SentMessage,
    SinkContents,
    SinkMessage,
    WorkLeft,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.scenario.effects import Delivery, EffectRule
from tests.model.builders import end_state, invocation, order_item, record, sent, write

TOPIC = "arn:aws:sns:us-east-1:000000000000:orders"
BUCKET = "receipts"
FIFO_WORDS = "a deduplication id within five minutes"
S3_WORDS = "an S3 key: one object per key"


def payload(order_id: str, quantity: int = 1) -> str:
    return json.dumps({"orderId": order_id, "quantity": quantity})


_CALLS = itertools.count(1)


def effect(
    text: str,
    *,
    kind: EffectKind = EffectKind.TOPIC,
    sink: str = TOPIC,
    key: str = "",
    accepted: bool = True,
    dedup_id: str = "",
    record_id: str = "",
    message_attributes: tuple[tuple[str, str], ...] = (),
) -> EffectRecord:
    operation = {
        EffectKind.TOPIC: "SNS.Publish",
        EffectKind.BUCKET: "S3.PutObject",
        EffectKind.FUNCTION: "Lambda.Invoke",
        EffectKind.STATE_MACHINE: "StepFunctions.StartExecution",
        EffectKind.BUS: "EventBridge.PutEvents",
    }[kind]
    return EffectRecord(
        operation=operation,
        kind=kind,
        sink=sink,
        payload=text,
        accepted=accepted,
        started_ns=0,
        ended_ns=1,
        key=key,
        dedup_id=dedup_id,
        record_id=record_id,
        message_attributes=message_attributes,
        call_id=f"c-{next(_CALLS)}",  # a call of its own, as each observed call has
    )


def delivery(
    request_id: str,
    message_id: str,
    order_id: str,
    writes: list[WriteRecord],
    effects: list[EffectRecord],
    *,
    receive_count: int = 1,
    outcome: InvocationOutcome = InvocationOutcome.SUCCESS,
    started_ns: int = 0,
) -> Invocation:
    inv = invocation(
        request_id,
        [record(message_id, order_id, receive_count)],
        writes,
        outcome=outcome,
        error=None if outcome is InvocationOutcome.SUCCESS else "Boom",
        started_ns=started_ns,
    )
    return dataclasses.replace(inv, effects=tuple(effects))


def rejected(item_order: str, quantity: int = 1, started_ns: int = 0) -> WriteRecord:
    item = order_item(item_order, quantity)
    return write(
        item,
        outcome=WriteOutcome.REJECTED,
        before=item,
        before_known=True,
        started_ns=started_ns,
    )


def history_of(
    messages: list[SentMessage], invocations: list[Invocation], acked: list[str]
) -> History:
    history = History(started_ns=0, ended_ns=100_000_000)
    history.sent = messages
    history.invocations = invocations
    history.acks = [Ack(message_id=m, acked_ns=90_000_000 + n) for n, m in enumerate(acked)]
    return history


def with_sinks(end: EndState, *sinks: SinkContents) -> EndState:
    return dataclasses.replace(end, sinks=sinks)


def topic(*payloads: str, fifo: bool = False, deduplicated: str = "") -> SinkContents:
    return SinkContents(
        name="orders",
        kind=EffectKind.TOPIC,
        address=TOPIC,
        messages=tuple(SinkMessage(p) for p in payloads),
        fifo=fifo,
        deduplicated=deduplicated,
    )


def the_sink(result: Check, name: str = "orders") -> SinkEffects:
    (found,) = [s for s in result.effects if s.sink == name]
    return found


def effect_counts(result: Check) -> dict[str, int | None]:
    c = result.counts
    return {
        "sent": c.effects_sent,
        "delivered": c.effects_delivered,
        "duplicate": c.duplicate_effects,
        "conflicting": c.conflicting_effects,
        "lost": c.lost_effects,
    }


def stored(n: int, effects: list[EffectRecord]) -> Invocation:
    """Order o-N's first delivery (request r-N, message m-N): it stores the order and sends
    ``effects``."""
    return delivery(f"r-{n}", f"m-{n}", f"o-{n}", [write(order_item(f"o-{n}", 1))], effects)


def three_orders() -> list[SentMessage]:
    return [sent(0, "o-1", "m-1"), sent(1, "o-2", "m-2"), sent(2, "o-3", "m-3")]


def test_a_run_without_sinks_or_effects_has_no_effect_counts() -> None:
    messages = three_orders()
    invocations = [stored(n, []) for n in (1, 2, 3)]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    result = check(history, end_state([order_item(f"o-{n}", 1) for n in (1, 2, 3)]))
    assert result.verdict is Verdict.PASS
    assert result.effects == ()
    assert effect_counts(result) == dict.fromkeys(effect_counts(result))
    assert not {k for k in result.counts.as_dict() if "effect" in k}


def test_publish_before_the_guard_publishes_on_every_delivery() -> None:
    messages = [*three_orders(), sent(3, "o-1", "m-4")]
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [effect(payload("o-1"))]),
        delivery("r-2", "m-2", "o-2", [write(order_item("o-2", 1))], [effect(payload("o-2"))]),
        delivery("r-3", "m-3", "o-3", [write(order_item("o-3", 1))], [effect(payload("o-3"))]),
        delivery("r-4", "m-4", "o-1", [rejected("o-1", started_ns=10)], [effect(payload("o-1"))]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3", "m-4"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    end = with_sinks(end_state(items), topic(*(payload(b) for b in ("o-1", "o-2", "o-3", "o-1"))))
    result = check(history, end)
    assert effect_counts(result) == {
        "sent": 4,
        "delivered": 4,
        "duplicate": 1,
        "conflicting": 0,
        "lost": 0,
    }
    assert result.counts.duplicate_writes == 0
    assert result.verdict is Verdict.FAIL
    assert "1 duplicate effect(s): o-1 published twice to orders" in result.reasons
    sink = the_sink(result)
    (witness,) = sink.witnesses
    assert witness.anomaly == "duplicate"
    assert [d.request_id for d in witness.deliveries] == ["r-1", "r-4"]
    assert [d.message_id for d in witness.deliveries] == ["m-1", "m-4"]


def event(order_id: str, kind: str) -> str:
    return json.dumps({"type": kind, "orderId": order_id, "quantity": 1})


def two_events(order_id: str) -> list[EffectRecord]:
    return [effect(event(order_id, "OrderPlaced")), effect(event(order_id, "InventoryReserved"))]


def test_two_events_one_delivery_sends_per_order_are_not_duplicates() -> None:
    # One topic, two different events per stored order; the copy of o-1 is acknowledged
    # without publishing.
    messages = [*three_orders(), sent(3, "o-1", "m-4")]
    invocations = [stored(n, two_events(f"o-{n}")) for n in (1, 2, 3)]
    invocations.append(delivery("r-4", "m-4", "o-1", [rejected("o-1", started_ns=10)], []))
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3", "m-4"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    held = [e.payload for n in (1, 2, 3) for e in two_events(f"o-{n}")]
    result = check(history, with_sinks(end_state(items), topic(*held)))
    assert effect_counts(result) == {
        "sent": 6,
        "delivered": 6,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 0,
    }
    assert result.verdict is Verdict.PASS


def test_a_copy_that_announces_both_events_again_duplicates_both() -> None:
    messages = [*three_orders(), sent(3, "o-1", "m-4")]
    invocations = [stored(n, two_events(f"o-{n}")) for n in (1, 2, 3)]
    invocations.append(
        delivery("r-4", "m-4", "o-1", [rejected("o-1", started_ns=10)], two_events("o-1"))
    )
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3", "m-4"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    held = [e.payload for o in ("o-1", "o-2", "o-3", "o-1") for e in two_events(o)]
    result = check(history, with_sinks(end_state(items), topic(*held)))
    assert effect_counts(result)["duplicate"] == 2
    assert result.verdict is Verdict.FAIL
    assert (
        "2 duplicate effect(s): o-1 published 4 times to orders (one delivery of it sends 2)"
        in result.reasons
    )


def _copies_in_one_batch(
    effects: list[EffectRecord], *, marked: tuple[str, str] = ("m-1", "m-2")
) -> Check:
    """o-1 and its copy in one invocation, o-2 alone in another; the first record's put
    stores o-1 and the copy's is refused (each write marked on ``marked``), then
    ``effects``; o-2's delivery sends what o-1's first record sent."""
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-1", "m-2"), sent(2, "o-2", "m-3")]
    stored_write = dataclasses.replace(write(order_item("o-1", 1)), record_id=marked[0])
    refused = dataclasses.replace(rejected("o-1", started_ns=10), record_id=marked[1])
    batch = invocation(
        "r-1", [record("m-1", "o-1", 1), record("m-2", "o-1", 1)], [stored_write, refused]
    )
    batch = dataclasses.replace(batch, effects=tuple(effects))
    other = [
        dataclasses.replace(
            e, payload=e.payload.replace("o-1", "o-2"), record_id="", call_id=f"{e.call_id}-2"
        )
        for e in effects
        if e.record_id == "m-1"
    ]
    alone = delivery("r-3", "m-3", "o-2", [write(order_item("o-2", 1))], other)
    history = history_of(messages, [batch, alone], ["m-1", "m-2", "m-3"])
    held = [e.payload for e in effects] + [e.payload for e in other]
    items = [order_item("o-1", 1), order_item("o-2", 1)]
    return check(history, with_sinks(end_state(items), topic(*held)))


def test_copies_in_one_batch_each_judged_by_their_own_marks() -> None:
    # The handler loops over the records: the first stores o-1 and publishes two events,
    # the copy is refused and publishes nothing. Two events are one delivery's.
    placed, reserved = (dataclasses.replace(e, record_id="m-1") for e in two_events("o-1"))
    result = _copies_in_one_batch([placed, reserved])
    assert effect_counts(result) == {
        "sent": 4,
        "delivered": 4,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 0,
    }
    assert result.verdict is Verdict.PASS


def test_copies_in_one_batch_read_first_are_judged_by_their_invocation() -> None:
    # A handler that reads both bodies first leaves every call on the last record: which
    # copy sent what is not known, and two announcements of o-1 stay a duplicate.
    def announced(n: int) -> EffectRecord:
        text = json.dumps({"eventId": f"e-{n}", "order": {"id": "o-1"}})
        return effect(text, record_id="m-2")

    result = _copies_in_one_batch([announced(1), announced(2)], marked=("m-2", "m-2"))
    assert effect_counts(result)["duplicate"] == 1


def test_a_batch_sent_after_the_loop_is_no_one_records_delivery() -> None:
    # Each record stored in turn (the marks moved), then one SendMessageBatch forwarding
    # every record, its source messageId in each body: marked on the last record, o-1's
    # copy, but made for both orders.
    def forwarded(order_id: str, source: str) -> EffectRecord:
        text = json.dumps({"orderId": order_id, "source": source})
        return dataclasses.replace(effect(text, record_id="m-3"), call_id="c-batch")

    messages = [sent(0, "o-2", "m-1"), sent(1, "o-1", "m-2"), sent(2, "o-1", "m-3")]
    writes = [
        dataclasses.replace(write(order_item("o-2", 1)), record_id="m-1"),
        dataclasses.replace(write(order_item("o-1", 1), started_ns=5), record_id="m-2"),
        dataclasses.replace(rejected("o-1", started_ns=10), record_id="m-3"),
    ]
    batch = invocation(
        "r-1", [record("m-1", "o-2", 1), record("m-2", "o-1", 1), record("m-3", "o-1", 1)], writes
    )
    sends = [forwarded("o-2", "m-1"), forwarded("o-1", "m-2"), forwarded("o-1", "m-3")]
    batch = dataclasses.replace(batch, effects=tuple(sends))
    history = history_of(messages, [batch], ["m-1", "m-2", "m-3"])
    items = [order_item("o-1", 1), order_item("o-2", 1)]
    result = check(history, with_sinks(end_state(items), topic(*(e.payload for e in sends))))
    assert effect_counts(result)["duplicate"] == 1
    assert "1 duplicate effect(s): o-1 published twice to orders" in result.reasons


def test_a_batch_of_copies_sent_after_the_loop_is_no_one_records_delivery() -> None:
    # The batch holds o-1's two copies only: each stored in turn, then both forwarded in
    # one SendMessageBatch marked on the last, each body naming its own source message.
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-1", "m-2")]
    writes = [
        dataclasses.replace(write(order_item("o-1", 1)), record_id="m-1"),
        dataclasses.replace(rejected("o-1", started_ns=10), record_id="m-2"),
    ]
    batch = invocation("r-1", [record("m-1", "o-1", 1), record("m-2", "o-1", 1)], writes)
    sends = [
        dataclasses.replace(
            effect(json.dumps({"orderId": "o-1", "source": m}), record_id="m-2"),
            call_id="c-batch",
        )
        for m in ("m-1", "m-2")
    ]
    history = history_of(
        messages, [dataclasses.replace(batch, effects=tuple(sends))], ["m-1", "m-2"]
    )
    end = with_sinks(end_state([order_item("o-1", 1)]), topic(*(e.payload for e in sends)))
    assert effect_counts(check(history, end))["duplicate"] == 1


def test_one_delivery_publishing_the_same_event_twice_is_a_duplicate() -> None:
    messages = three_orders()
    invocations = [
        stored(
            n,
            [effect(payload(f"o-{n}"))],
        )
        for n in (2, 3)
    ]
    same = [effect(payload("o-1")), effect(payload("o-1"))]
    invocations.insert(0, delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], same))
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    held = [payload(o) for o in ("o-1", "o-1", "o-2", "o-3")]
    result = check(history, with_sinks(end_state(items), topic(*held)))
    assert effect_counts(result)["duplicate"] == 1


def test_copies_in_one_batch_are_two_deliveries_whatever_record_a_call_is_marked_on() -> None:
    # Both copies of o-1 in one invocation, each publishing (before its guard); the calls
    # are both marked on the batch's last record, as a handler that reads every body first
    # leaves them.
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-1", "m-2")]
    inv = invocation(
        "r-1",
        [record("m-1", "o-1", 1), record("m-2", "o-1", 1)],
        [write(order_item("o-1", 1)), rejected("o-1", started_ns=10)],
    )
    marked = [effect(payload("o-1"), record_id="m-2"), effect(payload("o-1"), record_id="m-2")]
    history = history_of(
        messages, [dataclasses.replace(inv, effects=tuple(marked))], ["m-1", "m-2"]
    )
    end = with_sinks(end_state([order_item("o-1", 1)]), topic(payload("o-1"), payload("o-1")))
    assert effect_counts(check(history, end))["duplicate"] == 1


def test_an_order_that_reached_the_topic_with_one_of_its_two_events_lost_one() -> None:
    # o-1's delivery published OrderPlaced, then failed before InventoryReserved; its
    # redelivery found the order stored and returned without publishing.
    messages = three_orders()
    invocations = [
        delivery(
            "r-1",
            "m-1",
            "o-1",
            [write(order_item("o-1", 1))],
            two_events("o-1")[:1],
            outcome=InvocationOutcome.ERROR,
        ),
        *(stored(n, two_events(f"o-{n}")) for n in (2, 3)),
        delivery("r-4", "m-1", "o-1", [rejected("o-1", started_ns=10)], [], receive_count=2),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    held = [event("o-1", "OrderPlaced")] + [e.payload for n in (2, 3) for e in two_events(f"o-{n}")]
    result = check(history, with_sinks(end_state(items), topic(*held)))
    assert effect_counts(result) == {
        "sent": 5,
        "delivered": 5,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 1,
    }
    assert (
        "1 lost effect(s): o-1 published to orders 1 of the 2 entries one delivery sends "
        "(message m-1 acknowledged)" in result.reasons
    )


def test_orders_whose_deliveries_send_different_numbers_of_events_lose_none_by_count() -> None:
    # One event per line item: o-2 has two, o-3 three; o-1's one is all it sent.
    messages = three_orders()
    invocations = [
        stored(
            n,
            [effect(json.dumps({"orderId": f"o-{n}", "line": line})) for line in range(n)],
        )
        for n in (1, 2, 3)
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    held = [json.dumps({"orderId": f"o-{n}", "line": line}) for n in (1, 2, 3) for line in range(n)]
    result = check(history, with_sinks(end_state(items), topic(*held)))
    assert effect_counts(result)["lost"] == 0
    assert effect_counts(result)["duplicate"] == 0
    assert result.verdict is Verdict.PASS


def test_a_crash_between_the_put_and_the_publish_loses_the_effect() -> None:
    messages = three_orders()
    invocations = [
        delivery(
            "r-1",
            "m-1",
            "o-1",
            [write(order_item("o-1", 1))],
            [],
            outcome=InvocationOutcome.CRASH,
        ),
        delivery("r-2", "m-2", "o-2", [write(order_item("o-2", 1))], [effect(payload("o-2"))]),
        delivery("r-3", "m-3", "o-3", [write(order_item("o-3", 1))], [effect(payload("o-3"))]),
        # The redelivery finds the outcome stored and returns: it never publishes.
        delivery("r-4", "m-1", "o-1", [rejected("o-1", started_ns=10)], [], receive_count=2),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    result = check(history, with_sinks(end_state(items), topic(payload("o-2"), payload("o-3"))))
    assert effect_counts(result) == {
        "sent": 2,
        "delivered": 2,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 1,
    }
    assert result.counts.lost_outcomes == 0
    sink = the_sink(result)
    assert sink.required == "learned"
    # Learned per kind of sink and name: a queue named "orders" is another sink.
    assert set(result.effects_learned) == {"topic:orders"}
    assert result.verdict is Verdict.FAIL
    assert (
        "1 lost effect(s): o-1 never published to orders (message m-1 acknowledged)"
        in result.reasons
    )
    (witness,) = sink.witnesses
    assert [(d.request_id, d.outcome) for d in witness.deliveries] == [
        ("r-1", "crash"),
        ("r-4", "success"),
    ]


def test_an_entry_the_sink_refused_is_lost_though_its_delivery_succeeded() -> None:
    # o-2's only event was refused by the sink (a PutEvents entry with an ErrorCode, a
    # PublishBatch Failed entry); the handler never read the answer and was acknowledged.
    messages = three_orders()
    invocations = [
        stored(1, [effect(payload("o-1"))]),
        stored(
            2,
            [
                dataclasses.replace(
                    effect(payload("o-2"), accepted=False), error_code="InternalError"
                )
            ],
        ),
        stored(3, [effect(payload("o-3"))]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    result = check(history, with_sinks(end_state(items), topic(payload("o-1"), payload("o-3"))))
    assert effect_counts(result) == {
        "sent": 2,
        "delivered": 2,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 1,
    }
    assert the_sink(result).required == "learned"
    assert (
        "1 lost effect(s): o-2 never published to orders (message m-2 acknowledged); the "
        "sink refused 1 of its entries (InternalError)" in result.reasons
    )


def test_one_of_two_entries_refused_loses_that_entry() -> None:
    messages = three_orders()
    placed, reserved = two_events("o-2")
    invocations = [
        stored(1, two_events("o-1")),
        stored(
            2,
            [placed, dataclasses.replace(reserved, accepted=False, error_code="InvalidParameter")],
        ),
        stored(3, two_events("o-3")),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    held = [e.payload for o in ("o-1", "o-3") for e in two_events(o)] + [placed.payload]
    result = check(history, with_sinks(end_state(items), topic(*held)))
    assert effect_counts(result)["lost"] == 1
    assert (
        "1 lost effect(s): o-2 published to orders 1 of the 2 entries one delivery sends "
        "(message m-2 acknowledged); the sink refused 1 of its entries (InvalidParameter)"
        in result.reasons
    )


def test_a_refused_invoke_retried_by_the_handler_is_no_failure() -> None:
    # o-1's invoke of the audit function is throttled and retried by the handler, which
    # then succeeds; o-2's delivery crashed before invoking and its redelivery skipped it.
    audit = "arn:aws:lambda:us-east-1:000000000000:function:audit"

    def invoked(order_id: str, *, accepted: bool = True) -> EffectRecord:
        return effect(payload(order_id), kind=EffectKind.FUNCTION, sink=audit, accepted=accepted)

    messages = [sent(0, "o-1", "m-1"), sent(1, "o-2", "m-2")]
    invocations = [
        stored(1, [invoked("o-1", accepted=False), invoked("o-1")]),
        delivery(
            "r-2", "m-2", "o-2", [write(order_item("o-2", 1))], [], outcome=InvocationOutcome.CRASH
        ),
        delivery("r-3", "m-2", "o-2", [rejected("o-2")], [], receive_count=2),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2"])
    result = check(history, end_state([order_item("o-1", 1), order_item("o-2", 1)]))
    assert effect_counts(result)["lost"] == 1
    assert any(r.startswith("1 lost effect(s): o-2 never sent to") for r in result.reasons)


def test_a_refused_start_of_an_execution_the_sink_keeps_is_no_failure() -> None:
    # Each order's copy starts the execution named by the order again and is refused
    # (ExecutionAlreadyExists): the sink keeps it, so both orders still teach that a
    # delivery starts one; o-3's delivery crashed before starting and its redelivery
    # found the order stored.
    machine = "arn:aws:states:us-east-1:000000000000:stateMachine:fulfilment"

    def start(order_id: str, *, accepted: bool = True) -> EffectRecord:
        return effect(
            payload(order_id),
            kind=EffectKind.STATE_MACHINE,
            sink=machine,
            key=order_id,
            accepted=accepted,
        )

    messages = [
        sent(0, "o-1", "m-1"),
        sent(1, "o-1", "m-2"),
        sent(2, "o-2", "m-3"),
        sent(3, "o-2", "m-4"),
        sent(4, "o-3", "m-5"),
    ]
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [start("o-1")]),
        delivery("r-2", "m-2", "o-1", [rejected("o-1")], [start("o-1", accepted=False)]),
        delivery("r-3", "m-3", "o-2", [write(order_item("o-2", 1))], [start("o-2")]),
        delivery("r-4", "m-4", "o-2", [rejected("o-2")], [start("o-2", accepted=False)]),
        delivery(
            "r-5", "m-5", "o-3", [write(order_item("o-3", 1))], [], outcome=InvocationOutcome.CRASH
        ),
        delivery("r-6", "m-5", "o-3", [rejected("o-3")], [], receive_count=2),
    ]
    history = history_of(messages, invocations, [f"m-{n}" for n in range(1, 6)])
    executions = SinkContents(
        name="fulfilment",
        kind=EffectKind.STATE_MACHINE,
        address=machine,
        messages=tuple(SinkMessage(payload(o), o) for o in ("o-1", "o-2")),
        deduplicated="execution names are unique",
    )
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    result = check(history, with_sinks(end_state(items), executions))
    counts = effect_counts(result)
    assert (counts["sent"], counts["delivered"], counts["duplicate"]) == (2, 2, 0)
    assert counts["lost"] == 1
    assert the_sink(result, "fulfilment").required == "learned"


def test_a_cut_short_run_leaves_a_lost_effect_unjudged() -> None:
    messages = three_orders()
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], []),
        delivery("r-2", "m-2", "o-2", [write(order_item("o-2", 1))], [effect(payload("o-2"))]),
        delivery("r-3", "m-3", "o-3", [write(order_item("o-3", 1))], [effect(payload("o-3"))]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    end = with_sinks(end_state(items), topic(payload("o-2"), payload("o-3")))
    # o-1's delivery was clean and did not publish: the sink is optional, nothing lost.
    assert check(history, end).counts.lost_effects == 0
    declared = [EffectRule("orders", EffectKind.TOPIC, id="orderId", required=True)]
    assert check(history, end, effects=declared).counts.lost_effects == 1
    cut = check(history, end, effects=declared, cut_short=True)
    assert cut.counts.lost_effects == 0
    assert cut.verdict is Verdict.INCONCLUSIVE
    assert any("lost effect(s) on 'orders'" in r for r in cut.inconclusive)


def test_a_fifo_sink_deduplicates_the_resends_itself() -> None:
    messages = [sent(0, "o-1", "m-1")]
    fifo = "arn:aws:sns:us-east-1:000000000000:orders.fifo"
    publish = effect(payload("o-1"), sink=fifo, dedup_id="o-1")
    invocations = [
        delivery("r-1", "m-1", "o-1", [], [publish], outcome=InvocationOutcome.TIMEOUT),
        delivery(
            "r-2", "m-1", "o-1", [], [publish], receive_count=2, outcome=InvocationOutcome.ERROR
        ),
        delivery("r-3", "m-1", "o-1", [write(order_item("o-1", 1))], [publish], receive_count=3),
    ]
    history = history_of(messages, invocations, ["m-1"])
    sink = dataclasses.replace(
        topic(payload("o-1"), fifo=True, deduplicated=FIFO_WORDS), address=fifo
    )
    result = check(history, with_sinks(end_state([order_item("o-1", 1)]), sink))
    assert effect_counts(result) == {
        "sent": 3,
        "delivered": 1,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 0,
    }
    judged = the_sink(result)
    assert (judged.deduplicated, judged.deduplicated_by) == (2, FIFO_WORDS)
    assert not [r for r in result.reasons if "effect" in r]


def _bucket_run(keys: tuple[str, str], quantities: tuple[int, int]) -> Check:
    """o-1 sent twice (m-1, m-2); each delivery writes an object before its guard."""
    messages = [sent(0, "o-1", "m-1", quantities[0]), sent(1, "o-1", "m-2", quantities[1])]
    puts = [
        effect(payload("o-1", q), kind=EffectKind.BUCKET, sink=BUCKET, key=k)
        for k, q in zip(keys, quantities, strict=True)
    ]
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", quantities[0]))], [puts[0]]),
        delivery(
            "r-2",
            "m-2",
            "o-1",
            [rejected("o-1", quantities[0], started_ns=10)],
            [puts[1]],
            started_ns=10_000_000,
        ),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2"])
    objects: dict[str, str] = {}
    for put in puts:
        objects[put.key] = put.payload  # one object per key: the last write stays
    bucket = SinkContents(
        name="receipts",
        kind=EffectKind.BUCKET,
        address=BUCKET,
        messages=tuple(SinkMessage(text, key) for key, text in objects.items()),
        deduplicated=S3_WORDS,
    )
    return check(history, with_sinks(end_state([order_item("o-1", quantities[0])]), bucket))


def test_an_object_keyed_by_business_id_rewritten_with_the_same_bytes_is_one_object() -> None:
    result = _bucket_run(("orders/o-1.json", "orders/o-1.json"), (1, 1))
    assert effect_counts(result) == {
        "sent": 2,
        "delivered": 1,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 0,
    }
    assert the_sink(result, "receipts").deduplicated == 1
    assert result.verdict is Verdict.PASS


def test_an_object_keyed_by_business_id_rewritten_with_other_bytes_conflicts() -> None:
    result = _bucket_run(("orders/o-1.json", "orders/o-1.json"), (1, 2))
    assert effect_counts(result) == {
        "sent": 2,
        "delivered": 1,
        "duplicate": 0,
        "conflicting": 1,
        "lost": 0,
    }
    assert result.verdict is Verdict.FAIL
    assert any(
        r.startswith("1 conflicting effect(s): o-1 written to receipts") for r in result.reasons
    )


def _stamped_receipts(keys: tuple[str, ...]) -> Check:
    """o-1 sent three times, the same quantity; each delivery writes a receipt that names
    the amount (not as the message names its details) and its own processed_at."""
    messages = [sent(n, "o-1", f"m-{n + 1}") for n in range(3)]

    def receipt(n: int) -> str:
        return json.dumps({"order": "o-1", "amount_cents": 350, "processed_at": 1700 + n})

    puts = [
        effect(receipt(n), kind=EffectKind.BUCKET, sink=BUCKET, key=key)
        for n, key in enumerate(keys)
    ]
    invocations = [
        delivery(
            f"r-{n + 1}",
            f"m-{n + 1}",
            "o-1",
            [write(order_item("o-1", 1)) if n == 0 else rejected("o-1", started_ns=n)],
            [put],
            started_ns=n * 10_000_000,
        )
        for n, put in enumerate(puts)
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    objects = {put.key: put.payload for put in puts}
    bucket = SinkContents(
        name="receipts",
        kind=EffectKind.BUCKET,
        address=BUCKET,
        messages=tuple(SinkMessage(text, key) for key, text in objects.items()),
        deduplicated=S3_WORDS,
    )
    return check(history, with_sinks(end_state([order_item("o-1", 1)]), bucket))


def test_a_receipt_rewritten_with_its_own_timestamp_does_not_conflict() -> None:
    result = _stamped_receipts(("receipts/o-1.json",) * 3)
    assert effect_counts(result) == {
        "sent": 3,
        "delivered": 1,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 0,
    }
    assert result.verdict is Verdict.PASS


def test_receipts_keyed_by_message_id_with_their_own_timestamps_are_duplicates_only() -> None:
    result = _stamped_receipts(("receipts/m-1.json", "receipts/m-2.json", "receipts/m-3.json"))
    counts = effect_counts(result)
    assert (counts["delivered"], counts["duplicate"], counts["conflicting"]) == (3, 2, 0)


def test_objects_keyed_by_message_id_are_duplicates() -> None:
    result = _bucket_run(("orders/m-1.json", "orders/m-2.json"), (1, 1))
    assert effect_counts(result) == {
        "sent": 2,
        "delivered": 2,
        "duplicate": 1,
        "conflicting": 0,
        "lost": 0,
    }
    assert the_sink(result, "receipts").deduplicated == 0
    assert "1 duplicate effect(s): o-1 written twice to receipts" in result.reasons


def _duplicated_publish() -> tuple[History, EndState]:
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-1", "m-2")]
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [effect(payload("o-1"))]),
        delivery("r-2", "m-2", "o-1", [rejected("o-1", started_ns=10)], [effect(payload("o-1"))]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2"])
    end = with_sinks(end_state([order_item("o-1", 1)]), topic(payload("o-1"), payload("o-1")))
    return history, end


def test_duplicates_on_an_at_least_once_sink_are_reported_not_failed() -> None:
    history, end = _duplicated_publish()
    rule = EffectRule("orders", EffectKind.TOPIC, delivery=Delivery.AT_LEAST_ONCE)
    result = check(history, end, effects=[rule])
    assert result.verdict is Verdict.PASS
    assert result.counts.duplicate_effects == 0
    sink = the_sink(result)
    assert (sink.duplicate, sink.delivery) == (1, Delivery.AT_LEAST_ONCE)
    assert any("declared at-least-once" in n for n in result.notes)
    exactly_once = check(history, end)
    assert exactly_once.counts.duplicate_effects == 1
    assert exactly_once.verdict is Verdict.FAIL


def test_payloads_without_a_business_id_leave_the_run_inconclusive() -> None:
    messages = [sent(0, "o-1", "m-1")]
    done = json.dumps({"event": "order-done"})
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [effect(done)]),
    ]
    history = history_of(messages, invocations, ["m-1"])
    result = check(history, with_sinks(end_state([order_item("o-1", 1)]), topic(done)))
    assert result.verdict is Verdict.INCONCLUSIVE
    (reason,) = [r for r in result.inconclusive if "orders" in r]
    assert "sink 'orders'" in reason
    assert '[[effects]] sink = "orders", id = "PATH"' in reason
    assert the_sink(result).unidentified == 1
    # Declared: the id is where the entry says (a pattern inside the event's name here).
    rule = EffectRule("orders", EffectKind.TOPIC, id="event", id_pattern="^(o)rder")
    declared = check(
        history, with_sinks(end_state([order_item("o-1", 1)]), topic(done)), effects=[rule]
    )
    assert the_sink(declared).unidentified == 0


def test_a_sink_declared_any_is_counted_and_never_judged_per_order() -> None:
    # An audit line per batch, naming both orders and refused once: no one order's effect.
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-2", "m-2"), sent(2, "o-1", "m-3")]
    audit = json.dumps({"event": "batch-done", "orders": ["o-1", "o-2"]})
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [effect(audit)]),
        delivery("r-2", "m-2", "o-2", [write(order_item("o-2", 1))], [effect(audit)]),
        delivery("r-3", "m-3", "o-1", [rejected("o-1")], [effect(audit, accepted=False)]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    end = with_sinks(end_state([order_item("o-1", 1), order_item("o-2", 1)]), topic(audit, audit))
    judged = check(history, end)
    assert judged.verdict is Verdict.INCONCLUSIVE  # whose entries they are is not known
    rule = EffectRule("orders", EffectKind.TOPIC, delivery=Delivery.ANY)
    counted = check(history, end, effects=[rule])
    assert counted.verdict is Verdict.PASS, counted.reasons + counted.inconclusive
    assert effect_counts(counted) == {
        "sent": 2,
        "delivered": 2,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 0,
    }
    sink = the_sink(counted)
    assert (sink.delivery, sink.unidentified, sink.witnesses) == (Delivery.ANY, 0, ())
    assert any('declared delivery = "any"' in n for n in counted.notes)


def _announced_by_attribute(
    rules: list[EffectRule], *, body_names: str = ""
) -> tuple[Check, Check]:
    """o-1 and o-2, each sent twice and announced on every delivery with the order id only
    in a message attribute (the message: "order placed", or naming ``body_names``); the
    check of the run, and of the same run whose topic holds what was announced."""
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-1", "m-2"), sent(2, "o-2", "m-3")]
    messages.append(sent(3, "o-2", "m-4"))
    text = json.dumps({"order": body_names}) if body_names else "order placed"

    def announced(order_id: str) -> EffectRecord:
        return effect(text, message_attributes=(("eventType", "Placed"), ("orderId", order_id)))

    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [announced("o-1")]),
        delivery("r-2", "m-2", "o-1", [rejected("o-1", started_ns=1)], [announced("o-1")]),
        delivery("r-3", "m-3", "o-2", [write(order_item("o-2", 1))], [announced("o-2")]),
        delivery("r-4", "m-4", "o-2", [rejected("o-2", started_ns=1)], [announced("o-2")]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3", "m-4"])
    held = dataclasses.replace(
        topic(),
        messages=tuple(
            SinkMessage(e.payload, "", (), e.message_attributes)
            for inv in invocations
            for e in inv.effects
        ),
    )
    end = end_state([order_item("o-1", 1), order_item("o-2", 1)])
    return check(history, end, effects=rules), check(history, with_sinks(end, held), effects=rules)


def test_an_id_only_in_a_message_attribute_names_the_entry() -> None:
    # As the observer saw it sent, and as the topic held it.
    for result in _announced_by_attribute([]):
        assert effect_counts(result) == {
            "sent": 4,
            "delivered": 4,
            "duplicate": 2,
            "conflicting": 0,
            "lost": 0,
        }
        (sink,) = result.effects
        assert sink.unidentified == 0
        assert (
            "2 duplicate effect(s): o-1 published twice to orders; o-2 published twice to orders"
            in result.reasons[-1].replace(TOPIC, "orders")
        )


def test_a_declared_id_attribute_names_the_entry() -> None:
    rule = EffectRule("orders", EffectKind.TOPIC, id_attribute="orderId", required=True)
    # The message names another sent order: only the declared attribute says whose it is.
    _, read = _announced_by_attribute([rule], body_names="o-2")
    assert effect_counts(read)["duplicate"] == 2
    assert the_sink(read).unidentified == 0


def test_a_body_and_an_attribute_naming_two_orders_name_none() -> None:
    # o-1's entries name o-2 in their message and o-1 in an attribute: whose, is not said.
    _, read = _announced_by_attribute([], body_names="o-2")
    assert the_sink(read).unidentified == 2
    assert any(
        'id = "PATH" (a dotted path into the payload), or id_attribute = "NAME"' in r
        for r in read.inconclusive
    )


def test_a_sink_only_some_clean_messages_reach_is_optional() -> None:
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-2", "m-2")]
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [effect(payload("o-1"))]),
        delivery("r-2", "m-2", "o-2", [write(order_item("o-2", 1))], []),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2"])
    end = with_sinks(end_state([order_item("o-1", 1), order_item("o-2", 1)]), topic(payload("o-1")))
    result = check(history, end)
    assert result.counts.lost_effects == 0
    assert the_sink(result).required == "optional"
    assert result.verdict is Verdict.PASS


def test_an_incomplete_sink_counts_nothing_lost() -> None:
    history, end = _duplicated_publish()
    messages = [*history.sent, sent(2, "o-2", "m-3")]
    history.sent = messages
    history.acks = [*history.acks, Ack("m-3", 95_000_000)]
    cut = dataclasses.replace(end.sinks[0], complete=False)
    declared = [EffectRule("orders", EffectKind.TOPIC, id="orderId", required=True)]
    result = check(history, with_sinks(end, cut), effects=declared)
    assert result.counts.lost_effects == 0
    assert any("was not read to the end" in n for n in result.notes)
    complete = check(history, end, effects=declared)
    assert complete.counts.lost_effects == 1


def test_a_sink_still_holding_delayed_sends_leaves_the_run_inconclusive() -> None:
    # Both copies of o-1 sent before the guard, with a delay the read outlasted: the
    # queue held them, but what they were (two copies) was never seen.
    history, end = _duplicated_publish()
    held_back = dataclasses.replace(end.sinks[0], messages=(), complete=False, delayed=2)
    result = check(history, with_sinks(end, held_back))
    assert (result.counts.effects_sent, result.counts.effects_delivered) == (2, 0)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.inconclusive == (
        "sink 'orders' (topic) was not read to the end (2 message(s) still held back by the "
        "sender's DelaySeconds): 0 of the 2 send(s) it accepted were read, so its duplicates "
        "are not all seen and nothing is counted lost there",
    )
    assert not [n for n in result.notes if "never arrived" in n]


def test_a_function_invoked_twice_counts_its_accepted_sends() -> None:
    history, end = _duplicated_publish()
    invoke = effect(payload("o-1"), kind=EffectKind.FUNCTION, sink="billing")
    history.invocations = [
        dataclasses.replace(inv, effects=(invoke,)) for inv in history.invocations
    ]
    result = check(history, dataclasses.replace(end, sinks=()))
    sink = the_sink(result, "billing")
    assert (sink.sent, sink.delivered, sink.duplicate, sink.read) == (2, 2, 1, False)
    assert result.counts.duplicate_effects == 1


def test_a_function_sink_is_judged_by_what_its_capture_received() -> None:
    history, end = _duplicated_publish()
    address = "arn:aws:lambda:us-east-1:123456789012:function:loadtest-1a2b3c4d-0-billing"
    # Named by its function name, as a consumer may: the run's sink all the same.
    invoke = effect(payload("o-1"), kind=EffectKind.FUNCTION, sink="loadtest-1a2b3c4d-0-billing")
    history.invocations = [
        dataclasses.replace(inv, effects=(invoke,)) for inv in history.invocations
    ]
    function = SinkContents(
        name="billing",
        kind=EffectKind.FUNCTION,
        address=address,
        messages=(SinkMessage(payload("o-1")),),
    )
    result = check(history, with_sinks(end, function))
    sink = the_sink(result, "billing")
    assert (sink.sent, sink.delivered, sink.duplicate, sink.read) == (2, 1, 0, True)
    twice = with_sinks(end, dataclasses.replace(function, messages=function.messages * 2))
    sink = the_sink(check(history, twice), "billing")
    assert (sink.sent, sink.delivered, sink.duplicate, sink.read) == (2, 2, 1, True)


def test_an_allowed_effect_count_relaxes_its_reason() -> None:
    from loadtest.model.figures.thresholds import relaxed_reasons

    history, end = _duplicated_publish()
    result = check(history, end)
    kept, dropped = relaxed_reasons(
        result.reasons, result.counts.as_dict(), ["duplicate_effects"], timed_out=False
    )
    assert kept == []
    assert dropped == ["1 duplicate effect(s): o-1 published twice to orders"]


def test_an_id_is_found_as_a_token_of_a_payload_or_key_never_as_part_of_a_word() -> None:
    from loadtest.model.checker.details import named_id

    known = {"o-1", "o-12", "a"}
    assert named_id("order o-1 shipped", "", known) == "o-1"
    assert named_id({"note": "ORDER#o-12/x"}, "", known) == "o-12"
    assert named_id("", "receipts/o-1.json", known) == "o-1"
    assert named_id("xo-1 and o-1x", "", known) is None
    assert named_id({"a": "o-1", "b": "o-12"}, "", known) is None  # two ids: no guess
    assert named_id({"id": "o-1"}, "o-12", known) == "o-1"  # a leaf equal to it comes first


def test_an_effect_for_a_poison_message_is_its_own_and_never_lost() -> None:
    messages = [sent(0, "o-1", "m-1"), sent(1, "bad", "m-2", poison=True)]
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [effect(payload("o-1"))]),
        delivery(
            "r-2", "m-2", "bad", [], [effect(payload("bad"))], outcome=InvocationOutcome.ERROR
        ),
    ]
    history = history_of(messages, invocations, ["m-1"])
    end = with_sinks(end_state([order_item("o-1", 1)]), topic(payload("o-1"), payload("bad")))
    result = check(history, end)
    sink = the_sink(result)
    assert (sink.unidentified, sink.duplicate, sink.lost) == (0, 0, 0)
    assert not [r for r in result.inconclusive if "orders" in r]


def test_a_lost_effect_is_counted_per_message_and_witnessed_once_per_id() -> None:
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-1", "m-2"), sent(2, "o-2", "m-3")]
    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], []),
        delivery("r-2", "m-2", "o-1", [rejected("o-1", started_ns=10)], []),
        delivery("r-3", "m-3", "o-2", [write(order_item("o-2", 1))], [effect(payload("o-2"))]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item("o-1", 1), order_item("o-2", 1)]
    declared = [EffectRule("orders", EffectKind.TOPIC, id="orderId", required=True)]
    result = check(history, with_sinks(end_state(items), topic(payload("o-2"))), effects=declared)
    assert result.counts.lost_effects == 2
    (witness,) = the_sink(result).witnesses
    assert witness.text == "o-1 never published to orders (messages m-1, m-2 acknowledged)"
    assert [d.request_id for d in witness.deliveries] == ["r-1", "r-2"]


def test_a_sink_holding_more_than_was_seen_sent_says_so_and_is_judged_by_its_contents() -> None:
    history, end = _duplicated_publish()
    history.invocations = [dataclasses.replace(i, effects=()) for i in history.invocations]
    result = check(history, end)
    assert (result.counts.effects_sent, result.counts.effects_delivered) == (0, 2)
    assert result.counts.duplicate_effects == 1
    assert any("the observer saw 0 accepted send(s)" in n for n in result.notes)


def test_a_copy_announcing_other_details_with_both_events_conflicts_twice() -> None:
    messages = [*three_orders(), sent(3, "o-1", "m-4", quantity=2)]
    invocations = [stored(n, two_events(f"o-{n}")) for n in (1, 2, 3)]
    other = [
        effect(json.dumps({"type": kind, "orderId": "o-1", "quantity": 2}))
        for kind in ("OrderPlaced", "InventoryReserved")
    ]
    invocations.append(delivery("r-4", "m-4", "o-1", [rejected("o-1", started_ns=10)], other))
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3", "m-4"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    held = [e.payload for o in ("o-1", "o-2", "o-3") for e in two_events(o)]
    result = check(history, with_sinks(end_state(items), topic(*held, *(e.payload for e in other))))
    assert effect_counts(result)["duplicate"] == 2
    assert effect_counts(result)["conflicting"] == 2


def test_copies_announced_with_an_event_id_each_are_duplicates_not_conflicts() -> None:
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-1", "m-2"), sent(2, "o-1", "m-3")]

    def announced(n: int) -> str:
        return json.dumps({"eventId": f"e-{n}", "at": 1700000000 + n, "order": {"id": "o-1"}})

    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [effect(announced(1))]),
        *(
            delivery(
                f"r-{n}", f"m-{n}", "o-1", [rejected("o-1", started_ns=n)], [effect(announced(n))]
            )
            for n in (2, 3)
        ),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    end = with_sinks(end_state([order_item("o-1", 1)]), topic(*(announced(n) for n in (1, 2, 3))))
    counts = effect_counts(check(history, end))
    assert (counts["duplicate"], counts["conflicting"]) == (2, 0)


def test_copies_with_other_details_announced_under_other_names_conflict() -> None:
    # The event names the quantity "qty", not as the message does: compared whole, and the
    # copies did differ.
    messages = [sent(0, "o-1", "m-1", quantity=1), sent(1, "o-1", "m-2", quantity=5)]

    def announced(qty: int) -> str:
        return json.dumps({"order": "o-1", "qty": qty})

    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [effect(announced(1))]),
        delivery("r-2", "m-2", "o-1", [rejected("o-1", started_ns=5)], [effect(announced(5))]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2"])
    end = with_sinks(end_state([order_item("o-1", 1)]), topic(announced(1), announced(5)))
    counts = effect_counts(check(history, end))
    assert (counts["duplicate"], counts["conflicting"]) == (1, 1)


def test_an_entry_refused_in_a_batch_sent_after_the_loop_is_lost_for_its_own_order() -> None:
    # One invocation holds the three orders, stores each, then sends the three requests in
    # one SendMessageBatch after its loop: every entry is marked on the last record (m-3).
    # o-2's entry is refused (a delay SQS does not take) and the answer is never read.
    messages = three_orders()
    queue = "https://sqs.us-east-1.amazonaws.com/000000000000/shipping"

    def request(order_id: str, *, accepted: bool = True) -> EffectRecord:
        sent_entry = effect(payload(order_id), sink=queue, accepted=accepted, record_id="m-3")
        return dataclasses.replace(
            sent_entry,
            operation="SQS.SendMessageBatch",
            kind=EffectKind.QUEUE,
            call_id="batch-1",
            error_code=None if accepted else "InvalidParameterValue",
        )

    batch = invocation(
        "r-1",
        [record(f"m-{n}", f"o-{n}") for n in (1, 2, 3)],
        [write(order_item(f"o-{n}", 1)) for n in (1, 2, 3)],
    )
    batch = dataclasses.replace(
        batch,
        effects=(request("o-1"), request("o-2", accepted=False), request("o-3")),
    )
    history = history_of(messages, [batch], ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    shipping = SinkContents(
        name="shipping",
        kind=EffectKind.QUEUE,
        address=queue,
        messages=(SinkMessage(payload("o-1")), SinkMessage(payload("o-3"))),
    )
    result = check(history, with_sinks(end_state(items), shipping))
    # o-1 and o-3 went through cleanly and reached the queue: it is required, and o-2,
    # acknowledged, never got there.
    assert the_sink(result, "shipping").required == "learned"
    assert effect_counts(result) == {
        "sent": 2,
        "delivered": 2,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 1,
    }
    assert (
        "1 lost effect(s): o-2 never sent to shipping (message m-2 acknowledged); the sink "
        "refused 1 of its entries (InvalidParameterValue)" in result.reasons
    )


def _announced_by_subject(rules: list[EffectRule]) -> tuple[Check, Check]:
    """o-1 and o-2, each sent twice and announced on every delivery with the order id only
    in the SNS Subject ("Order o-N placed"; the Message the same text for every order); the
    check of the run, and of the same run whose topic holds what was announced."""
    messages = [sent(0, "o-1", "m-1"), sent(1, "o-1", "m-2"), sent(2, "o-2", "m-3")]
    messages.append(sent(3, "o-2", "m-4"))

    def announced(order_id: str) -> EffectRecord:
        return dataclasses.replace(effect("order placed"), subject=f"Order {order_id} placed")

    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [announced("o-1")]),
        delivery("r-2", "m-2", "o-1", [rejected("o-1", started_ns=1)], [announced("o-1")]),
        delivery("r-3", "m-3", "o-2", [write(order_item("o-2", 1))], [announced("o-2")]),
        delivery("r-4", "m-4", "o-2", [rejected("o-2", started_ns=1)], [announced("o-2")]),
    ]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3", "m-4"])
    held = dataclasses.replace(
        topic(),
        messages=tuple(
            SinkMessage(e.payload, "", (), (), e.subject)
            for inv in invocations
            for e in inv.effects
        ),
    )
    end = end_state([order_item("o-1", 1), order_item("o-2", 1)])
    return check(history, end, effects=rules), check(history, with_sinks(end, held), effects=rules)


def test_an_id_only_in_the_subject_names_the_entry() -> None:
    # As the observer saw it sent, as the topic held it, and where a pattern declares it.
    declared = EffectRule("orders", EffectKind.TOPIC, id_pattern=r"Order (\S+) placed")
    for rules in ([], [declared]):
        for result in _announced_by_subject(rules):
            assert effect_counts(result) == {
                "sent": 4,
                "delivered": 4,
                "duplicate": 2,
                "conflicting": 0,
                "lost": 0,
            }
            (sink,) = result.effects
            assert sink.unidentified == 0
            assert result.verdict is Verdict.FAIL


def test_a_receipt_staged_copied_and_unstaged_is_one_object_per_order() -> None:
    # Each delivery writes staging/<message id>.json, copies it to receipts/<order id>.json
    # and deletes the staging object: the bucket holds the final receipts only. o-1 is sent
    # twice; every delivery stages and copies.
    messages = [*three_orders(), sent(3, "o-1", "m-4")]

    def staged(order_id: str, message_id: str) -> list[EffectRecord]:
        stage = f"staging/{message_id}.json"
        put = effect(payload(order_id), kind=EffectKind.BUCKET, sink=BUCKET, key=stage)
        copy = dataclasses.replace(
            effect(f"{BUCKET}/{stage}", kind=EffectKind.BUCKET, sink=BUCKET),
            operation="S3.CopyObject",
            key=f"receipts/{order_id}.json",
            started_ns=1,
            ended_ns=2,
        )
        delete = dataclasses.replace(
            effect("", kind=EffectKind.BUCKET, sink=BUCKET, key=stage),
            operation="S3.DeleteObject",
            started_ns=3,
            ended_ns=4,
        )
        return [put, copy, delete]

    invocations = [stored(n, staged(f"o-{n}", f"m-{n}")) for n in (1, 2, 3)]
    invocations.append(
        delivery("r-4", "m-4", "o-1", [rejected("o-1", started_ns=10)], staged("o-1", "m-4"))
    )
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3", "m-4"])
    receipts = SinkContents(
        name=BUCKET,
        kind=EffectKind.BUCKET,
        address=BUCKET,
        messages=tuple(SinkMessage(payload(f"o-{n}"), f"receipts/o-{n}.json") for n in (1, 2, 3)),
        deduplicated=S3_WORDS,
    )
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    result = check(history, with_sinks(end_state(items), receipts))
    assert result.verdict is Verdict.PASS, result.reasons
    # Eight writes accepted: four staging objects, deleted by the delivery that wrote each,
    # and four copies to three keys, one rewritten with the same bytes.
    assert effect_counts(result) == {
        "sent": 8,
        "delivered": 3,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 0,
    }
    sink = the_sink(result, BUCKET)
    assert (sink.required, sink.deduplicated, sink.unstaged) == ("learned", 1, 4)
    assert (
        "4 object(s) written to 'receipts' were deleted again by the invocation that wrote them"
        ": neither delivered nor duplicates" in result.notes
    )


def test_a_receipt_its_copy_deleted_is_lost_for_every_message_of_its_order() -> None:
    # Each delivery writes receipts/<order id>.json before its conditional put; a copy that
    # finds the order stored deletes that key, the original's receipt with it. o-2 is sent
    # once and keeps its receipt; o-1 and o-3 are sent twice and end with none.
    messages = [
        sent(0, "o-1", "m-1"),
        sent(1, "o-1", "m-2"),
        sent(2, "o-2", "m-3"),
        sent(3, "o-3", "m-4"),
        sent(4, "o-3", "m-5"),
    ]

    def receipt(order_id: str) -> EffectRecord:
        return effect(
            payload(order_id), kind=EffectKind.BUCKET, sink=BUCKET, key=f"receipts/{order_id}.json"
        )

    def removed(order_id: str) -> EffectRecord:
        return dataclasses.replace(receipt(order_id), operation="S3.DeleteObject", payload="")

    invocations = [
        delivery("r-1", "m-1", "o-1", [write(order_item("o-1", 1))], [receipt("o-1")]),
        delivery(
            "r-2", "m-2", "o-1", [rejected("o-1", started_ns=5)], [receipt("o-1"), removed("o-1")]
        ),
        delivery("r-3", "m-3", "o-2", [write(order_item("o-2", 1))], [receipt("o-2")]),
        delivery("r-4", "m-4", "o-3", [write(order_item("o-3", 1))], [receipt("o-3")]),
        delivery(
            "r-5", "m-5", "o-3", [rejected("o-3", started_ns=5)], [receipt("o-3"), removed("o-3")]
        ),
    ]
    history = history_of(messages, invocations, [f"m-{n}" for n in range(1, 6)])
    receipts = SinkContents(
        name=BUCKET,
        kind=EffectKind.BUCKET,
        address=BUCKET,
        messages=(SinkMessage(payload("o-2"), "receipts/o-2.json"),),
        deduplicated=S3_WORDS,
    )
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    result = check(history, with_sinks(end_state(items), receipts))
    # Every order's first delivery wrote its receipt: the bucket is where complete deliveries
    # go, whatever the copies took away.
    assert the_sink(result, BUCKET).required == "learned"
    assert effect_counts(result) == {
        "sent": 5,
        "delivered": 1,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 4,
    }
    assert (
        "4 lost effect(s): o-1 written to receipts, but no longer there when read (messages "
        "m-1, m-2 acknowledged); o-3 written to receipts, but no longer there when read "
        "(messages m-4, m-5 acknowledged)" in result.reasons
    )


def test_a_sink_holding_more_than_was_seen_sent_says_why_it_may_be() -> None:
    # The publishes were left to a thread: their answers were never read in an invocation,
    # so no effect was recorded, but the topic holds two of them.
    messages = three_orders()
    invocations = [stored(n, []) for n in (1, 2, 3)]
    history = history_of(messages, invocations, ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    result = check(history, with_sinks(end_state(items), topic(payload("o-1"), payload("o-2"))))
    assert (effect_counts(result)["sent"], effect_counts(result)["delivered"]) == (0, 2)
    assert (
        "sink 'orders' holds 2 entr(ies) but the observer saw 0 accepted send(s) to it: the "
        "rest went through a client it does not hook, or were sent by calls whose answer it "
        "never read (left to a thread that ran on while the environment was frozen or "
        "retired); its counts are read from what the sink holds" in result.notes
    )


# --- work the handler left running when it returned ------------------------------------


def _announced_later(n: int) -> Invocation:
    """Order o-N stored by r-N, whose publish it left to a thread (work w-N)."""
    return dataclasses.replace(
        stored(n, []), left_work=(WorkLeft(f"w-{n}", f"m-{n}", "thread 'announcer'"),)
    )


def _thread_history(ended: set[int]) -> tuple[History, EndState]:
    invocations = [_announced_later(n) for n in (1, 2, 3)]
    # The threads that finished did so while a later invocation ran: their publish and
    # their end are on that one's record, the publish marked on the record they were for.
    later = dataclasses.replace(
        invocation("r-9", [], []),
        effects=tuple(effect(payload(f"o-{n}"), record_id=f"m-{n}") for n in sorted(ended)),
        ended_work=tuple(f"w-{n}" for n in sorted(ended)),
    )
    history = history_of(three_orders(), [*invocations, later], ["m-1", "m-2", "m-3"])
    items = [order_item(f"o-{n}", 1) for n in (1, 2, 3)]
    return history, with_sinks(end_state(items), topic(*(payload(f"o-{n}") for n in ended)))


def test_an_order_whose_announcing_thread_never_finished_lost_its_effect() -> None:
    history, end = _thread_history({1, 2})
    result = check(history, end)
    assert effect_counts(result) == {
        "sent": 2,
        "delivered": 2,
        "duplicate": 0,
        "conflicting": 0,
        "lost": 1,
    }
    assert result.verdict is Verdict.FAIL
    assert the_sink(result).required == "learned"
    assert any(
        n.startswith("1 of the 3 piece(s) of work (threads, pool calls, asyncio tasks) the handler")
        and "thread 'announcer', started for message m-3" in n
        for n in result.notes
    )


def test_threads_that_all_finished_leave_the_run_judged_as_without_them() -> None:
    history, end = _thread_history({1, 2, 3})
    result = check(history, end)
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert effect_counts(result)["lost"] == 0
    assert not any("left running" in n for n in result.notes)


def test_a_sink_no_finished_delivery_shows_required_is_inconclusive_with_work_unfinished() -> None:
    history, end = _thread_history(set())
    result = check(history, end)
    assert result.verdict is Verdict.INCONCLUSIVE
    (why,) = result.inconclusive
    assert why.startswith("sink 'orders' (topic) is not known to be required, and 3 piece(s)")
