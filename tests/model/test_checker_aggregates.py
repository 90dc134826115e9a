"""The checker on outcomes that are aggregates: items changed on behalf of several messages.

Synthetic histories of a ledger that adds each order's quantity to its customer's running
total (``ADD amount :q, orders :o``): judged per (business id, item), with exact counts.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from loadtest.errors import ScenarioError
from loadtest.model.checker import Check, Verdict, check
from loadtest.model.history.log import (
    Ack,
    EndState,
    History,
    Invocation,
    OutcomeKey,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.scenario.loading import parse_scenario
from loadtest.model.scenario.model import to_raw
from tests.model.builders import invocation, record, sent, write

SHARED = OutcomeKey(declared=True, shared=True)


def ledger(customer: str, amount: int, orders: list[str]) -> TypedItem:
    return {
        "id": {"S": customer},
        "amount": {"N": str(amount)},
        "orders": {"SS": sorted(orders)},
    }


def add(
    before: TypedItem | None,
    after: TypedItem,
    *,
    record_id: str = "",
    at_ns: int = 0,
    outcome: WriteOutcome = WriteOutcome.ACCEPTED,
    operation: str = "UpdateItem",
) -> WriteRecord:
    """An update of a customer's item from ``before`` to ``after`` (known old image)."""
    made = write(
        after,
        before=before,
        before_known=True,
        condition=None,
        operation=operation,
        started_ns=at_ns,
        outcome=outcome,
    )
    return dataclasses.replace(made, record_id=record_id)


def deliver(request_id: str, message_id: str, business_id: str, *writes: WriteRecord) -> Invocation:
    return invocation(request_id, [record(message_id, business_id)], list(writes))


def history_of(sent_ids: list[tuple[str, str, int]], invocations: list[Invocation]) -> History:
    """sent_ids: (message id, business id, quantity), all acknowledged."""
    history = History()
    history.sent = [sent(i, bid, mid, q) for i, (mid, bid, q) in enumerate(sent_ids)]
    history.acks = [Ack(message_id=mid, acked_ns=100) for mid, _, _ in sent_ids]
    history.invocations = invocations
    return history


def table(*items: TypedItem) -> EndState:
    return EndState(0, 0, 0, {str(item["id"]["S"]): item for item in items})


def roles(result: Check) -> list[tuple[str | None, str]]:
    return [(d.business_id, d.role.value) for d in result.decisions]


def two_orders_one_copied() -> tuple[History, EndState]:
    """Orders a (3) and b (2) for customer-0, c (5) for customer-1; a delivered twice,
    each copy applying its increment."""
    c0_a = ledger("customer-0", 3, ["a"])
    c0_ab = ledger("customer-0", 5, ["a", "b"])
    c0_aab = ledger("customer-0", 8, ["a", "b"])
    c1 = ledger("customer-1", 5, ["c"])
    history = history_of(
        [("m-1", "a", 3), ("m-2", "b", 2), ("m-3", "c", 5), ("m-4", "a", 3)],
        [
            deliver("r-1", "m-1", "a", add(None, c0_a, at_ns=1_000_000)),
            deliver("r-2", "m-2", "b", add(c0_a, c0_ab, at_ns=2_000_000)),
            deliver("r-3", "m-3", "c", add(None, c1, at_ns=3_000_000)),
            deliver("r-4", "m-4", "a", add(c0_ab, c0_aab, at_ns=4_000_000)),
        ],
    )
    return history, table(c0_aab, c1)


def test_a_second_delivery_applying_the_increment_again_is_a_duplicate_effect() -> None:
    result = check(*two_orders_one_copied())
    c = result.counts
    assert result.verdict is Verdict.FAIL
    assert (c.writes_accepted, c.side_writes, c.noop_writes) == (4, 0, 0)
    assert (c.duplicate_writes, c.conflicting_writes, c.lost_outcomes) == (1, 1, 0)
    assert sorted(roles(result)) == [("a", "again"), ("a", "first"), ("b", "first"), ("c", "first")]
    # Detected, and said so: never a silent guess.
    assert result.outcome.startswith("aggregates: 2 item(s) changed on behalf of several")
    assert "detected from the writes" in result.outcome
    assert any("outcomes judged as aggregates" in note for note in result.notes)


def test_the_same_run_declared_shared_counts_the_same() -> None:
    result = check(*two_orders_one_copied(), SHARED)
    assert (result.counts.duplicate_writes, result.counts.conflicting_writes) == (1, 1)
    assert "as the scenario declares ([outcome] shared)" in result.outcome


def test_distinct_orders_for_one_customer_are_not_duplicates() -> None:
    c0_a = ledger("customer-0", 3, ["a"])
    c0_ab = ledger("customer-0", 5, ["a", "b"])
    c1 = ledger("customer-1", 5, ["c"])
    history = history_of(
        [("m-1", "a", 3), ("m-2", "b", 2), ("m-3", "c", 5)],
        [
            deliver("r-1", "m-1", "a", add(None, c0_a, at_ns=1_000_000)),
            deliver("r-2", "m-2", "b", add(c0_a, c0_ab, at_ns=2_000_000)),
            deliver("r-3", "m-3", "c", add(None, c1, at_ns=3_000_000)),
        ],
    )
    result = check(history, table(c0_ab, c1))
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    c = result.counts
    assert (c.writes_accepted, c.duplicate_writes, c.conflicting_writes, c.lost_outcomes) == (
        3,
        0,
        0,
        0,
    )


def test_an_update_that_changes_nothing_is_a_noop_not_a_duplicate() -> None:
    # The copy only ADDs the order id to the set, where it already is: nothing changed.
    c0_a = ledger("customer-0", 3, ["a"])
    c0_ab = ledger("customer-0", 5, ["a", "b"])
    history = history_of(
        [("m-1", "a", 3), ("m-2", "b", 2), ("m-3", "a", 3)],
        [
            deliver("r-1", "m-1", "a", add(None, c0_a, at_ns=1_000_000)),
            deliver("r-2", "m-2", "b", add(c0_a, c0_ab, at_ns=2_000_000)),
            deliver("r-3", "m-3", "a", add(c0_ab, c0_ab, at_ns=3_000_000)),
        ],
    )
    result = check(history, table(c0_ab))
    c = result.counts
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert (c.writes_accepted, c.noop_writes, c.duplicate_writes, c.lost_outcomes) == (3, 1, 0, 0)


def test_a_guarded_ledger_rejects_the_copies_and_passes() -> None:
    c0_a = ledger("customer-0", 3, ["a"])
    c0_ab = ledger("customer-0", 5, ["a", "b"])
    rejected = dataclasses.replace(
        add(c0_ab, c0_ab, at_ns=3_000_000, outcome=WriteOutcome.REJECTED),
        condition="attribute_not_exists(orders) OR NOT contains(orders, :id)",
    )
    history = history_of(
        [("m-1", "a", 3), ("m-2", "b", 2), ("m-3", "a", 3), ("m-4", "b", 2)],
        [
            deliver("r-1", "m-1", "a", add(None, c0_a, at_ns=1_000_000)),
            deliver("r-2", "m-2", "b", add(c0_a, c0_ab, at_ns=2_000_000)),
            deliver("r-3", "m-3", "a", rejected),
            deliver("r-4", "m-4", "b", dataclasses.replace(rejected, ended_ns=4_000_000)),
        ],
    )
    result = check(history, table(c0_ab), SHARED)
    c = result.counts
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert (c.writes_accepted, c.writes_rejected, c.duplicate_writes, c.lost_outcomes) == (
        2,
        2,
        0,
        0,
    )


def test_a_read_modify_write_by_two_copies_is_a_duplicate() -> None:
    # get, then put the whole item with total + q: the second copy read the first's total.
    c0_a = ledger("customer-0", 3, ["a"])
    c0_ab = ledger("customer-0", 5, ["a", "b"])
    c0_aab = ledger("customer-0", 8, ["a", "b"])
    put = "PutItem"
    history = history_of(
        [("m-1", "a", 3), ("m-2", "b", 2), ("m-3", "a", 3)],
        [
            deliver("r-1", "m-1", "a", add(None, c0_a, at_ns=1_000_000, operation=put)),
            deliver("r-2", "m-2", "b", add(c0_a, c0_ab, at_ns=2_000_000, operation=put)),
            deliver("r-3", "m-3", "a", add(c0_ab, c0_aab, at_ns=3_000_000, operation=put)),
        ],
    )
    result = check(history, table(c0_aab))
    assert result.verdict is Verdict.FAIL
    assert (result.counts.duplicate_writes, result.counts.conflicting_writes) == (1, 1)


def test_steps_of_one_delivery_on_one_item_are_one_effect() -> None:
    # One delivery adds the amount, then (a second call) the order id: one outcome.
    amount = {"id": {"S": "customer-0"}, "amount": {"N": "3"}}
    c0_a = ledger("customer-0", 3, ["a"])
    c0_ab = ledger("customer-0", 5, ["a", "b"])
    history = history_of(
        [("m-1", "a", 3), ("m-2", "b", 2)],
        [
            deliver(
                "r-1",
                "m-1",
                "a",
                add(None, amount, at_ns=1_000_000),
                add(amount, c0_a, at_ns=1_500_000),
            ),
            deliver("r-2", "m-2", "b", add(c0_a, c0_ab, at_ns=2_000_000)),
        ],
    )
    result = check(history, table(c0_ab))
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert sorted(roles(result)) == [("a", "first"), ("a", "step"), ("b", "first")]
    assert result.counts.duplicate_writes == 0


def test_an_acked_message_whose_id_changed_no_aggregate_is_lost() -> None:
    # b's write was refused by an error, and b was acknowledged (the handler swallowed it).
    c0_a = ledger("customer-0", 3, ["a"])
    c0_ac = ledger("customer-0", 8, ["a", "c"])
    refused = add(c0_a, c0_a, at_ns=2_000_000, outcome=WriteOutcome.ERROR)
    history = history_of(
        [("m-1", "a", 3), ("m-2", "b", 2), ("m-3", "b", 2), ("m-4", "c", 5)],
        [
            deliver("r-1", "m-1", "a", add(None, c0_a, at_ns=1_000_000)),
            deliver("r-2", "m-2", "b", refused),
            deliver("r-3", "m-3", "b", dataclasses.replace(refused, ended_ns=2_600_000)),
            deliver("r-4", "m-4", "c", add(c0_a, c0_ac, at_ns=3_000_000)),
        ],
    )
    result = check(history, table(c0_ac), SHARED)
    assert result.verdict is Verdict.FAIL
    # Counted per acknowledged message, as for per-message outcomes.
    assert (result.counts.lost_outcomes, result.counts.duplicate_writes) == (2, 0)


def untied_batch() -> History:
    """One invocation carrying a and b, whose writes name no record."""
    c0_a = ledger("customer-0", 3, ["a"])
    c0_ab = ledger("customer-0", 5, ["a", "b"])
    history = history_of([("m-1", "a", 3), ("m-2", "b", 2)], [])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a"), record("m-2", "b")],
            [add(None, c0_a, at_ns=1_000_000), add(c0_a, c0_ab, at_ns=2_000_000)],
        )
    ]
    return history


def test_writes_not_tied_to_a_record_are_never_judged_as_aggregates_by_guess() -> None:
    c0_ab = ledger("customer-0", 5, ["a", "b"])
    result = check(untied_batch(), table(c0_ab))
    assert result.verdict is Verdict.INCONCLUSIVE
    (reason,) = result.inconclusive
    assert "could not be tied to the record they were made for" in reason
    assert "[outcome] shared = true" in reason
    declared = check(untied_batch(), table(c0_ab), SHARED)
    assert declared.verdict is Verdict.INCONCLUSIVE
    assert any("2 write(s) of the aggregate items" in r for r in declared.inconclusive)


def test_marked_writes_in_a_batch_are_tied_to_their_records() -> None:
    history = untied_batch()
    (inv,) = history.invocations
    a, b = inv.writes
    tied = (dataclasses.replace(a, record_id="m-1"), dataclasses.replace(b, record_id="m-2"))
    history.invocations = [dataclasses.replace(inv, writes=tied)]
    result = check(history, table(ledger("customer-0", 5, ["a", "b"])))
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert sorted(roles(result)) == [("a", "first"), ("b", "first")]


def test_per_message_outcomes_never_become_aggregates() -> None:
    # Each order's own item: the key model, untouched by the aggregates' rule.
    item = {"id": {"S": "a"}, "quantity": {"N": "3"}}
    history = history_of([("m-1", "a", 3)], [deliver("r-1", "m-1", "a", add(None, item))])
    result = check(history, EndState(0, 0, 0, {"a": item}))
    assert result.outcome == "outcome items keyed id = '{id}'"


def test_outcome_shared_is_parsed_round_tripped_and_refused_with_a_key() -> None:
    scenario = parse_scenario({"outcome": {"shared": True}}, source="mem")
    assert scenario.outcome.shared and scenario.outcome.declared
    raw = to_raw(scenario)
    assert raw["outcome"] == {"shared": True}
    assert parse_scenario(raw, source="mem").outcome.shared
    bad: list[tuple[dict[str, Any], str]] = [
        ({"shared": "yes"}, "outcome.shared must be true or false, got 'yes'"),
        ({"shared": True, "key": {"id": "{id}"}}, "give one of them, not both"),
    ]
    for outcome, message in bad:
        with pytest.raises(ScenarioError, match=message):
            parse_scenario({"outcome": outcome}, source="mem")


def test_stock_per_sku_is_judged_from_the_ties_alone() -> None:
    # The item names no order: only the record each write was made for says whose it is.
    def stock(level: int) -> TypedItem:
        return {"id": {"S": "sku-7"}, "stock": {"N": str(level)}}

    history = history_of(
        [("m-1", "a", 3), ("m-2", "b", 2), ("m-3", "b", 2)],
        [
            deliver("r-1", "m-1", "a", add(None, stock(97), at_ns=1_000_000)),
            deliver("r-2", "m-2", "b", add(stock(97), stock(95), at_ns=2_000_000)),
            deliver("r-3", "m-3", "b", add(stock(95), stock(93), at_ns=3_000_000)),
        ],
    )
    result = check(history, table(stock(93)))
    assert result.verdict is Verdict.FAIL
    c = result.counts
    assert (c.writes_accepted, c.duplicate_writes, c.conflicting_writes, c.lost_outcomes) == (
        3,
        1,
        1,
        0,
    )
    assert sorted(roles(result)) == [("a", "first"), ("b", "again"), ("b", "first")]


def test_a_counter_beside_per_message_outcomes_is_a_side_write_each_order_adds_to_once() -> None:
    # Each order's own item (guarded), and a processed-orders counter: the outcomes live
    # under the key, the counter is a side write. Bumped by every delivery, the copy of a
    # that found its order stored counted it again: a duplicate side write, not a
    # duplicate write. Bumped only by the delivery that stored the order: nothing repeats.
    order = {"id": {"S": "a"}, "quantity": {"N": "3"}}
    other = {"id": {"S": "b"}, "quantity": {"N": "2"}}

    def counter(n: int) -> TypedItem:
        return {"id": {"S": "stats"}, "processed": {"N": str(n)}}

    rejected = add(order, order, at_ns=3_000_000, outcome=WriteOutcome.REJECTED)
    first = deliver("r-1", "m-1", "a", add(None, order), add(None, counter(1), at_ns=1_000))
    second = deliver("r-2", "m-2", "b", add(None, other), add(counter(1), counter(2), at_ns=2_000))
    sent = [("m-1", "a", 3), ("m-2", "b", 2), ("m-3", "a", 3)]

    every = history_of(
        sent, [first, second, deliver("r-3", "m-3", "a", rejected, add(counter(2), counter(3)))]
    )
    result = check(every, EndState(0, 0, 0, {"a": order, "b": other, "stats": counter(3)}))
    assert result.verdict is Verdict.FAIL
    assert result.outcome == "outcome items keyed id = '{id}'"
    c = result.counts
    assert (c.writes_accepted, c.writes_rejected, c.side_writes, c.duplicate_writes) == (2, 1, 3, 0)
    assert c.duplicate_side_writes == 1
    assert result.reasons == (
        "1 duplicate side write(s): a delivery added to an item beside its outcome that "
        "another delivery for the same business id had added to (a added to id=stats in the "
        "outcome table in 2 deliveries)",
    )

    once = history_of(sent, [first, second, deliver("r-3", "m-3", "a", rejected)])
    result = check(once, EndState(0, 0, 0, {"a": order, "b": other, "stats": counter(2)}))
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert (result.counts.side_writes, result.counts.duplicate_side_writes) == (2, 0)


# --- lost updates: read-modify-writes of one customer's item by different orders --------

PUT = "PutItem"


def counts_of(result: Check) -> tuple[int, int, int]:
    c = result.counts
    return (c.duplicate_writes, c.conflicting_writes, c.lost_outcomes)


def test_a_lost_update_between_two_orders_is_a_lost_outcome_not_a_duplicate() -> None:
    # a and b both read the total x left (10) and put it back with their own quantity:
    # b's put replaced a's, so the end item neither holds a's 5 nor lists a.
    c0_x = ledger("customer-0", 10, ["x"])
    c0_xa = ledger("customer-0", 15, ["a", "x"])
    c0_xb = ledger("customer-0", 17, ["b", "x"])
    history = history_of(
        [("m-1", "x", 10), ("m-2", "a", 5), ("m-3", "b", 7)],
        [
            deliver("q-1", "m-1", "x", add(None, c0_x, at_ns=1_000_000, operation=PUT)),
            deliver("q-2", "m-2", "a", add(c0_x, c0_xa, at_ns=2_000_000, operation=PUT)),
            deliver("q-3", "m-3", "b", add(c0_xa, c0_xb, at_ns=3_000_000, operation=PUT)),
        ],
    )
    result = check(history, table(c0_xb))
    assert result.verdict is Verdict.FAIL
    assert counts_of(result) == (0, 0, 1)
    assert sorted(roles(result)) == [("a", "first"), ("b", "first"), ("x", "first")]
    assert check(history, table(c0_xb), SHARED).counts.lost_outcomes == 1


def test_a_second_delivery_of_one_order_listed_again_is_a_duplicate() -> None:
    # a's copy read the total a had already raised and added a's quantity again.
    c0_a = ledger("customer-0", 5, ["a"])
    c0_aa: TypedItem = {"id": {"S": "customer-0"}, "amount": {"N": "10"}}
    c0_aa["orders"] = {"L": [{"S": "a"}, {"S": "a"}]}
    history = history_of(
        [("m-1", "a", 5), ("m-2", "a", 5)],
        [
            deliver("q-1", "m-1", "a", add(None, c0_a, at_ns=1_000_000, operation=PUT)),
            deliver("q-2", "m-2", "a", add(c0_a, c0_aa, at_ns=2_000_000, operation=PUT)),
        ],
    )
    result = check(history, table(c0_aa), SHARED)
    assert result.verdict is Verdict.FAIL
    assert counts_of(result) == (1, 1, 0)
    assert sorted(roles(result)) == [("a", "again"), ("a", "first")]


def test_a_lost_update_and_a_duplicate_in_one_run_are_each_counted_once() -> None:
    # customer-0: b's put overwrote a's; customer-1: c's copy applied c again.
    c0_x = ledger("customer-0", 10, ["x"])
    c0_xa = ledger("customer-0", 15, ["a", "x"])
    c0_xb = ledger("customer-0", 17, ["b", "x"])
    c1_c = ledger("customer-1", 4, ["c"])
    c1_cc = ledger("customer-1", 8, ["c"])
    history = history_of(
        [("m-1", "x", 10), ("m-2", "a", 5), ("m-3", "b", 7), ("m-4", "c", 4), ("m-5", "c", 4)],
        [
            deliver("q-1", "m-1", "x", add(None, c0_x, at_ns=1_000_000, operation=PUT)),
            deliver("q-2", "m-2", "a", add(c0_x, c0_xa, at_ns=2_000_000, operation=PUT)),
            deliver("q-3", "m-3", "b", add(c0_xa, c0_xb, at_ns=3_000_000, operation=PUT)),
            deliver("q-4", "m-4", "c", add(None, c1_c, at_ns=4_000_000)),
            deliver("q-5", "m-5", "c", add(c1_c, c1_cc, at_ns=5_000_000)),
        ],
    )
    result = check(history, table(c0_xb, c1_cc))
    assert result.verdict is Verdict.FAIL
    assert result.counts.writes_accepted == 5
    assert counts_of(result) == (1, 1, 1)
    assert sorted(roles(result)) == [
        ("a", "first"),
        ("b", "first"),
        ("c", "again"),
        ("c", "first"),
        ("x", "first"),
    ]


def test_a_redelivery_that_stores_an_overwritten_order_again_is_no_duplicate() -> None:
    # a's first put was overwritten by b's; a's redelivery read b's total and added a:
    # the end total holds every order once.
    c0_x = ledger("customer-0", 10, ["x"])
    c0_xa = ledger("customer-0", 15, ["a", "x"])
    c0_xb = ledger("customer-0", 17, ["b", "x"])
    c0_xba = ledger("customer-0", 22, ["a", "b", "x"])
    history = history_of(
        [("m-1", "x", 10), ("m-2", "a", 5), ("m-3", "b", 7), ("m-4", "a", 5)],
        [
            deliver("q-1", "m-1", "x", add(None, c0_x, at_ns=1_000_000, operation=PUT)),
            deliver("q-2", "m-2", "a", add(c0_x, c0_xa, at_ns=2_000_000, operation=PUT)),
            deliver("q-3", "m-3", "b", add(c0_xa, c0_xb, at_ns=3_000_000, operation=PUT)),
            deliver("q-4", "m-4", "a", add(c0_xb, c0_xba, at_ns=4_000_000, operation=PUT)),
        ],
    )
    result = check(history, table(c0_xba))
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert counts_of(result) == (0, 0, 0)
    assert sorted(roles(result)) == [("a", "first"), ("a", "first"), ("b", "first"), ("x", "first")]


def test_a_guarded_read_modify_write_has_no_lost_update_and_no_duplicate() -> None:
    # Each put is conditioned on the total it read (and on the order not being listed):
    # b's stale put and a's copy are rejected; b's redelivery reads a's total and adds b.
    c0_x = ledger("customer-0", 10, ["x"])
    c0_xa = ledger("customer-0", 15, ["a", "x"])
    c0_xab = ledger("customer-0", 22, ["a", "b", "x"])
    guard = "amount = :read AND NOT contains(orders, :id)"

    def rejected(at_ns: int) -> WriteRecord:
        made = add(c0_xa, c0_xa, at_ns=at_ns, operation=PUT, outcome=WriteOutcome.REJECTED)
        return dataclasses.replace(made, condition=guard)

    history = history_of(
        [("m-1", "x", 10), ("m-2", "a", 5), ("m-3", "b", 7), ("m-4", "b", 7), ("m-5", "a", 5)],
        [
            deliver("q-1", "m-1", "x", add(None, c0_x, at_ns=1_000_000, operation=PUT)),
            deliver("q-2", "m-2", "a", add(c0_x, c0_xa, at_ns=2_000_000, operation=PUT)),
            deliver("q-3", "m-3", "b", rejected(3_000_000)),
            deliver("q-4", "m-4", "b", add(c0_xa, c0_xab, at_ns=4_000_000, operation=PUT)),
            deliver("q-5", "m-5", "a", rejected(5_000_000)),
        ],
    )
    result = check(history, table(c0_xab), SHARED)
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert (result.counts.writes_accepted, result.counts.writes_rejected) == (3, 2)
    assert counts_of(result) == (0, 0, 0)


def test_an_item_naming_only_its_last_order_is_not_judged_by_what_it_lists() -> None:
    # ``last_order`` names one order at a time by design: each put replaces it, which
    # says nothing of whose change the total still holds.
    def total(amount: int, last: str) -> TypedItem:
        return {"id": {"S": "customer-0"}, "amount": {"N": str(amount)}, "last_order": {"S": last}}

    history = history_of(
        [("m-1", "a", 5), ("m-2", "b", 7)],
        [
            deliver("q-1", "m-1", "a", add(None, total(5, "a"), at_ns=1_000_000, operation=PUT)),
            deliver(
                "q-2",
                "m-2",
                "b",
                add(total(5, "a"), total(12, "b"), at_ns=2_000_000, operation=PUT),
            ),
        ],
    )
    result = check(history, table(total(12, "b")), SHARED)
    assert result.verdict is Verdict.PASS, (result.reasons, result.inconclusive)
    assert counts_of(result) == (0, 0, 0)


def test_overlapping_copies_answered_out_of_order_are_still_a_duplicate() -> None:
    # The backend applied m-1's ADD first, but m-2's answer came back first: m-1's old
    # image not listing a says nothing, as m-2's write had not been answered when it began.
    c0_a = ledger("customer-0", 3, ["a"])
    c0_aa = ledger("customer-0", 6, ["a"])
    first = dataclasses.replace(add(None, c0_a, at_ns=1_000_000), ended_ns=2_000_000)
    second = dataclasses.replace(add(c0_a, c0_aa, at_ns=1_100_000), ended_ns=1_600_000)
    history = history_of(
        [("m-1", "a", 3), ("m-2", "a", 3)],
        [deliver("q-1", "m-1", "a", first), deliver("q-2", "m-2", "a", second)],
    )
    result = check(history, table(c0_aa), SHARED)
    assert result.verdict is Verdict.FAIL
    assert counts_of(result) == (1, 1, 0)
