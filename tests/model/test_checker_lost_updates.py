"""Lost updates between two different orders that share an item: a write computed from a
read made before the other order changed the item replaces that change. Counted as the
other order's lost outcome, never as a duplicate (the orders are different)."""

from __future__ import annotations

import dataclasses

from loadtest.model.checker import check
from loadtest.model.checker.verdict import Check
from loadtest.model.history.log import (
    Ack,
    History,
    Invocation,
    ReadRecord,
    TypedItem,
    WriteRecord,
)
from tests.model.builders import end_state, invocation, order_item, record, sent, write

CUSTOMER = {"id": {"S": "customer#c-1"}}


def _total(quantity: int) -> TypedItem:
    return {**CUSTOMER, "total": {"N": str(quantity)}}


def _delivery(
    request_id: str,
    message_id: str,
    order: str,
    read: TypedItem | None,
    writes: list[WriteRecord],
    read_at: int,
) -> Invocation:
    inv = invocation(request_id, [record(message_id, order)], writes, started_ns=read_at)
    found = ReadRecord(CUSTOMER, read, True, read_at, read_at + 100)
    return dataclasses.replace(inv, reads=(found,))


def _put(
    item: TypedItem, before: TypedItem | None, at: int, *, replaces: bool = True
) -> WriteRecord:
    put = write(item, before=before, before_known=True, condition=None, started_ns=at)
    return dataclasses.replace(put, replaces=replaces)


def _race(*, a_put: WriteRecord, b_put: WriteRecord, orders: bool = False, end: TypedItem) -> Check:
    """order a (2) and order b (3) of customer c-1 both read the total before either
    writes it; a writes first. With ``orders``, each also stores its order item first."""
    history = History(started_ns=0, ended_ns=90_000_000)
    history.sent = [sent(0, "order-a", "m-1", 2), sent(1, "order-b", "m-2", 3)]
    own_a = [write(order_item("order-a", 2), before_known=True, started_ns=1)] if orders else []
    own_b = [write(order_item("order-b", 3), before_known=True, started_ns=2)] if orders else []
    history.invocations = [
        _delivery("r-1", "m-1", "order-a", None, [*own_a, a_put], 10),
        _delivery("r-2", "m-2", "order-b", None, [*own_b, b_put], 20),
    ]
    history.acks = [Ack("m-1", 80_000_000), Ack("m-2", 80_000_000)]
    items = [end]
    if orders:
        items += [order_item("order-a", 2), order_item("order-b", 3)]
    return check(history, end_state(items))


def test_a_running_total_written_back_from_a_stale_read_loses_the_other_orders_change() -> None:
    judged = _race(
        a_put=_put(_total(2), None, 1_000),
        b_put=_put(_total(3), _total(2), 2_000),
        end=_total(3),
    )
    assert judged.counts.lost_outcomes == 1, judged.reasons
    assert judged.counts.duplicate_writes == 0 and judged.counts.conflicting_writes == 0
    assert any(
        r.startswith("1 lost update(s)") and "order-a's change to customer#c-1" in r
        for r in judged.reasons
    ), judged.reasons


def test_the_same_race_on_a_total_kept_beside_each_orders_own_item_is_a_lost_outcome() -> None:
    judged = _race(
        a_put=_put(_total(2), None, 1_000),
        b_put=_put(_total(3), _total(2), 2_000),
        orders=True,
        end=_total(3),
    )
    assert judged.counts.lost_outcomes == 1, judged.reasons
    assert judged.counts.duplicate_writes == 0


def test_an_increment_after_a_read_loses_nothing() -> None:
    # ADD (or SET total = total + :q) adds to what the item holds, whatever was read.
    judged = _race(
        a_put=_put(_total(2), None, 1_000, replaces=False),
        b_put=_put(_total(5), _total(2), 2_000, replaces=False),
        orders=True,
        end=_total(5),
    )
    assert judged.counts.lost_outcomes == 0, judged.reasons
    assert judged.verdict.value == "pass", judged.reasons


def test_a_write_over_what_its_delivery_read_loses_nothing() -> None:
    # b read a's total (no stale read): serial, 5 in the end.
    history = History(started_ns=0, ended_ns=90_000_000)
    history.sent = [sent(0, "order-a", "m-1", 2), sent(1, "order-b", "m-2", 3)]
    history.invocations = [
        _delivery("r-1", "m-1", "order-a", None, [_put(_total(2), None, 1_000)], 10),
        _delivery("r-2", "m-2", "order-b", _total(2), [_put(_total(5), _total(2), 3_000)], 2_000),
    ]
    history.acks = [Ack("m-1", 80_000_000), Ack("m-2", 80_000_000)]
    judged = check(history, end_state([_total(5)]))
    assert judged.counts.lost_outcomes == 0, judged.reasons


def test_a_copy_of_the_same_order_writing_again_is_a_duplicate_not_a_lost_update() -> None:
    history = History(started_ns=0, ended_ns=90_000_000)
    history.sent = [sent(0, "order-a", "m-1", 2), sent(1, "order-a", "m-2", 2)]
    history.invocations = [
        _delivery("r-1", "m-1", "order-a", None, [_put(_total(2), None, 1_000)], 10),
        _delivery("r-2", "m-2", "order-a", None, [_put(_total(2), _total(2), 2_000)], 20),
    ]
    history.acks = [Ack("m-1", 80_000_000), Ack("m-2", 80_000_000)]
    judged = check(history, end_state([_total(2)]))
    assert not any("lost update" in r for r in judged.reasons), judged.reasons


def test_a_repeat_replaced_after_its_order_was_read_loses_nothing_of_the_order() -> None:
    # b read the total with a's change in it; a's copy then added it again, and b's put
    # replaced only that repeat: a's order is still in the total.
    history = History(started_ns=0, ended_ns=90_000_000)
    history.sent = [
        sent(0, "order-a", "m-1", 2),
        sent(1, "order-a", "m-2", 2),
        sent(2, "order-b", "m-3", 3),
    ]
    history.invocations = [
        _delivery("r-1", "m-1", "order-a", None, [_put(_total(2), None, 1_000)], 10),
        _delivery(
            "r-3", "m-3", "order-b", _total(2), [_put(_total(5), _total(4), 3_000_000)], 1_000_000
        ),
        _delivery(
            "r-2", "m-2", "order-a", _total(2), [_put(_total(4), _total(2), 2_000_000)], 1_100_000
        ),
    ]
    history.acks = [Ack(m.message_id or "", 80_000_000) for m in history.sent]
    judged = check(history, end_state([_total(5)]))
    assert not any("lost update" in r for r in judged.reasons), judged.reasons
