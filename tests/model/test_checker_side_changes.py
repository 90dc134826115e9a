"""The rule on repeated side changes (``loadtest.model.checker.side_changes``): an item beside
the outcomes that two successful deliveries of one business id each added to, in the outcome
table or an extra table, and what it leaves alone."""

from __future__ import annotations

import dataclasses
from typing import Any

from loadtest.model.checker import Check, Verdict, check
from loadtest.model.history.log import (
    EndState,
    Invocation,
    InvocationOutcome,
    SideWrite,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)
from tests.model.builders import invocation, record, write
from tests.model.test_checker_aggregates import history_of

ORDER = {"id": {"S": "a"}, "quantity": {"N": "3"}}
SENT = [("m-1", "a", 3), ("m-2", "a", 3)]
"""Two copies of order a, both acknowledged."""


def _write(
    before: TypedItem | None, after: TypedItem | None, operation: str, **fields: Any
) -> WriteRecord:
    made = write(
        after or before or {}, before=before, before_known=True, condition=None, operation=operation
    )
    return dataclasses.replace(
        made, item_after=after, requested=after, **fields, outcome=WriteOutcome.ACCEPTED
    )


def _order(first: bool) -> WriteRecord:
    if first:
        return _write(None, ORDER, "PutItem", replaces=True)
    return dataclasses.replace(
        _write(ORDER, ORDER, "PutItem", replaces=True), outcome=WriteOutcome.REJECTED
    )


def _stock(n: int) -> TypedItem:
    return {"id": {"S": "stock#widget"}, "reserved": {"N": str(n)}}


def _lock(owner: str) -> TypedItem:
    return {"id": {"S": "lock#a"}, "owner": {"S": owner}}


def _judge(*invocations: Invocation, end: dict[str, TypedItem] | None = None) -> Check:
    return check(history_of(SENT, list(invocations)), EndState(0, 0, 0, end or {"a": ORDER}))


def test_stock_added_to_by_both_copies_is_one_duplicate_side_write() -> None:
    result = _judge(
        invocation(
            "r-1", [record("m-1", "a")], [_write(None, _stock(3), "UpdateItem"), _order(True)]
        ),
        invocation(
            "r-2", [record("m-2", "a")], [_write(_stock(3), _stock(6), "UpdateItem"), _order(False)]
        ),
    )
    assert result.verdict is Verdict.FAIL
    assert (result.counts.duplicate_writes, result.counts.duplicate_side_writes) == (0, 1)


def test_a_lock_taken_again_a_stamp_rewritten_and_a_reservation_given_back_are_not() -> None:
    result = _judge(
        invocation(
            "r-1",
            [record("m-1", "a")],
            [
                _write(None, _lock("r-1"), "PutItem", replaces=True),
                _order(True),
                _write(None, _stock(3), "UpdateItem"),
                _write(_lock("r-1"), None, "DeleteItem"),
            ],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            # takes the lock, reserves, finds the order stored, gives the reservation back
            [
                _write(None, _lock("r-2"), "PutItem", replaces=True),
                _write(_stock(3), _stock(6), "UpdateItem"),
                _order(False),
                _write(_stock(6), _stock(3), "UpdateItem"),
                _write(_lock("r-2"), None, "DeleteItem"),
            ],
        ),
    )
    assert result.verdict is Verdict.PASS, result.reasons
    assert result.counts.duplicate_side_writes == 0


def test_what_a_failed_delivery_added_is_left_to_the_one_that_finishes() -> None:
    result = _judge(
        dataclasses.replace(
            invocation("r-1", [record("m-1", "a")], [_write(None, _stock(3), "UpdateItem")]),
            outcome=InvocationOutcome.ERROR,
            error="crashed",
        ),
        invocation(
            "r-2",
            [record("m-1", "a", 2)],
            [_write(_stock(3), _stock(6), "UpdateItem"), _order(True)],
        ),
        invocation("r-3", [record("m-2", "a")], [_order(False)]),
    )
    assert result.counts.duplicate_side_writes == 0


def _stock_write(
    operation: str, request_id: str, record_id: str, before: str, after: str, **fields: Any
) -> SideWrite:
    """A write of the item sku=widget in the extra table stock that changed it."""
    return SideWrite(
        operation,
        "stock",
        1,
        request_id,
        key={"sku": {"S": "widget"}},
        before=before,
        after=after,
        changed=True,
        record_id=record_id,
        **fields,
    )


def test_an_extra_tables_item_is_tied_to_the_record_the_handler_was_on() -> None:
    def reserve(request_id: str, record_id: str, before: str, after: str) -> SideWrite:
        return _stock_write("UpdateItem", request_id, record_id, before, after, adds=True)

    both = dataclasses.replace(
        invocation("r-1", [record("m-1", "a"), record("m-2", "a")], [_order(True), _order(False)]),
        side_writes=(reserve("r-1", "m-1", "-", "s3"), reserve("r-1", "m-2", "s3", "s6")),
    )
    result = _judge(both)
    assert result.counts.duplicate_side_writes == 1
    assert "a added to sku=widget in table stock in 2 deliveries" in result.reasons[0]
    untied = dataclasses.replace(
        both, side_writes=tuple(dataclasses.replace(w, record_id="") for w in both.side_writes)
    )
    assert _judge(untied).counts.duplicate_side_writes is None  # tied to no delivery: not judged


def _level(units: int | str, **more: TypedItem) -> TypedItem:
    return {"id": {"S": "stock#widget"}, "units": {"N": str(units)}, **more}


def test_a_level_put_back_less_the_same_units_by_both_copies_is_one() -> None:
    # Plain puts, each of a level read before: the level moves by 3 in each delivery.
    result = _judge(
        invocation(
            "r-1",
            [record("m-1", "a")],
            [_write(_level(10), _level(7), "PutItem", replaces=True), _order(True)],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [_write(_level(7), _level(4), "PutItem", replaces=True), _order(False)],
        ),
    )
    assert result.verdict is Verdict.FAIL
    assert (result.counts.duplicate_writes, result.counts.duplicate_side_writes) == (0, 1)
    assert "a added to id=stock#widget in the outcome table in 2 deliveries" in result.reasons[0]


def test_levels_moved_by_other_amounts_or_as_clock_readings_are_not_one_change_repeated() -> None:
    def judged(first: tuple[TypedItem, TypedItem], second: tuple[TypedItem, TypedItem]) -> Check:
        return _judge(
            invocation(
                "r-1",
                [record("m-1", "a")],
                [_write(*first, "PutItem", replaces=True), _order(True)],
            ),
            invocation(
                "r-2",
                [record("m-2", "a")],
                [_write(*second, "PutItem", replaces=True), _order(False)],
            ),
        )

    other_amounts = judged((_level(10), _level(7)), (_level(7), _level(5)))
    seconds = judged(
        (_level(1_765_000_000), _level(1_765_000_001)),
        (_level(1_765_000_001), _level(1_765_000_002)),
    )
    millis = judged(
        (_level(1_765_000_000_000), _level(1_765_000_000_001)),
        (_level(1_765_000_000_001), _level(1_765_000_000_002)),
    )
    # A stamp in a map beside the level, moved by one second by each copy.
    stamped = judged(
        (
            _level(7, at={"M": {"s": {"N": "1765000000"}}}),
            _level(7, at={"M": {"s": {"N": "1765000001"}}}),
        ),
        (
            _level(7, at={"M": {"s": {"N": "1765000001"}}}),
            _level(7, at={"M": {"s": {"N": "1765000002"}}}),
        ),
    )
    for result in (other_amounts, seconds, millis, stamped):
        assert result.verdict is Verdict.PASS, result.reasons
        assert not result.counts.duplicate_side_writes
    # The same amounts in a map are one change repeated.
    nested = judged(
        (_level(0, bins={"M": {"b1": {"N": "9"}}}), _level(0, bins={"M": {"b1": {"N": "8"}}})),
        (_level(0, bins={"M": {"b1": {"N": "8"}}}), _level(0, bins={"M": {"b1": {"N": "7"}}})),
    )
    assert nested.counts.duplicate_side_writes == 1


def test_a_level_moved_by_a_failed_delivery_is_left_to_the_one_that_finishes() -> None:
    result = _judge(
        dataclasses.replace(
            invocation(
                "r-1",
                [record("m-1", "a")],
                [_write(_level(10), _level(7), "PutItem", replaces=True)],
            ),
            outcome=InvocationOutcome.ERROR,
            error="crashed",
        ),
        invocation(
            "r-2",
            [record("m-1", "a", 2)],
            [_write(_level(7), _level(4), "PutItem", replaces=True), _order(True)],
        ),
        invocation("r-3", [record("m-2", "a")], [_order(False)]),
    )
    assert result.verdict is Verdict.PASS, result.reasons
    assert result.counts.duplicate_side_writes == 0


def test_an_extra_tables_level_moved_alike_by_both_copies_is_one() -> None:
    def put_back(request_id: str, record_id: str, before: str, after: str) -> SideWrite:
        return _stock_write("PutItem", request_id, record_id, before, after, moves={"units": "-3"})

    result = _judge(
        invocation("r-1", [record("m-1", "a")], [_order(True)]),
        invocation("r-2", [record("m-2", "a")], [_order(False)]),
    )
    assert result.counts.duplicate_side_writes is None
    both = _judge(
        dataclasses.replace(
            invocation("r-1", [record("m-1", "a")], [_order(True)]),
            side_writes=(put_back("r-1", "m-1", "l10", "l7"),),
        ),
        dataclasses.replace(
            invocation("r-2", [record("m-2", "a")], [_order(False)]),
            side_writes=(put_back("r-2", "m-2", "l7", "l4"),),
        ),
    )
    assert both.counts.duplicate_side_writes == 1
    assert "a added to sku=widget in table stock in 2 deliveries" in both.reasons[0]


def test_a_level_one_copy_made_and_another_took_from_is_one() -> None:
    # The first copy found no level and made one less its units; the next took from it.
    made_then_taken = _judge(
        invocation(
            "r-1",
            [record("m-1", "a")],
            [_write(None, _level(997), "PutItem", replaces=True), _order(True)],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [_write(_level(997), _level(994), "PutItem", replaces=True), _order(False)],
        ),
    )
    assert made_then_taken.verdict is Verdict.FAIL
    assert made_then_taken.counts.duplicate_side_writes == 1
    # A copy that finds the level another copy made and leaves it alone changed nothing.
    made_once = _judge(
        invocation(
            "r-1",
            [record("m-1", "a")],
            [_write(None, _level(997), "PutItem", replaces=True), _order(True)],
        ),
        invocation("r-2", [record("m-2", "a")], [_order(False)]),
    )
    assert made_once.verdict is Verdict.PASS, made_once.reasons
