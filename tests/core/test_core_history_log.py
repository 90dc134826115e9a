"""The invocation log: framed invocations come back equal, in order, one frame at a time."""

from __future__ import annotations

import dataclasses
import marshal
import zlib

import pytest

from loadtest.model.history import (
    FRAME_RECORDS,
    History,
    Invocation,
    InvocationLog,
    InvocationOutcome,
    ObserverFault,
    ReadRecord,
    Record,
    UnobservedCall,
    WriteOutcome,
    WriteRecord,
    _encode_invocation,
)
from tests.core.core_builders import invocation, order_item, record, write


def _every_kind(n: int) -> Invocation:
    """An invocation holding every record kind and every field the log must keep."""
    item = order_item(f"o-{n % 7}", n % 10 + 1)
    outcomes = list(WriteOutcome)
    base = invocation(
        f"r-{n}",
        [record(f"m-{n}", f"o-{n % 7}", receive_count=n % 3 + 1), record(f"p-{n}", None)],
        [
            dataclasses.replace(
                write(item, outcome=outcomes[n % len(outcomes)], before=item, started_ns=n),
                error_code="ConditionalCheckFailedException" if n % 2 else None,
                request_id=f"r-{n}",
            ),
            write(item, operation="BatchWriteItem.Delete", started_ns=n + 1),
        ],
        outcome=list(InvocationOutcome)[n % len(InvocationOutcome)],
        error="boom" if n % 2 else None,
        started_ns=1_000 * n,
        result={"id": f"o-{n % 7}", "list": [1, "two", None, 3.5], "ok": n % 2 == 0},
        log_tail=f"RESULT {n}\n",
    )
    return dataclasses.replace(
        base,
        environment=n % 8,
        failed_message_ids=(f"p-{n}",) if n % 5 == 0 else (),
        reads=(
            ReadRecord({"id": item["id"]}, item if n % 2 else None, n % 3 == 0, n, n + 1, f"r-{n}"),
        ),
        unobserved=(UnobservedCall("ExecuteStatement", "a SELECT with OR", f"r-{n}"),),
        observer_faults=(ObserverFault("PutItem", "TypeError: boom", f"r-{n}"),),
    )


def test_every_record_kind_comes_back_equal_in_order() -> None:
    originals = [_every_kind(n) for n in range(2 * FRAME_RECORDS + 3)]
    log = InvocationLog(originals)
    assert len(log) == len(originals)
    assert list(log) == originals
    assert log[0] == originals[0]
    assert log[FRAME_RECORDS + 1] == originals[FRAME_RECORDS + 1]
    assert log[-1] == originals[-1]
    decoded = log[3]
    assert decoded.outcome is originals[3].outcome
    assert [w.outcome for w in decoded.writes] == [w.outcome for w in originals[3].writes]
    with pytest.raises(IndexError):
        log[len(originals)]


def test_framed_invocations_are_compressed_bytes_not_objects() -> None:
    log = InvocationLog(_every_kind(n) for n in range(FRAME_RECORDS + 1))
    (frame,) = log._frames
    assert isinstance(frame, bytes)
    assert len(marshal.loads(zlib.decompress(frame))) == FRAME_RECORDS
    assert [inv.request_id for inv in log._tail] == [f"r-{FRAME_RECORDS}"]


def test_one_shared_item_is_framed_once() -> None:
    item = order_item("shared", 3)
    log = InvocationLog(
        invocation(f"r-{n}", [record(f"m-{n}", "shared")], [write(item)])
        for n in range(FRAME_RECORDS)
    )
    first, second, *_ = log  # one frame, decoded once
    assert first.writes[0].item_after is second.writes[0].item_after


def test_invocations_appended_while_iterating_are_seen_across_a_frame_boundary() -> None:
    log = InvocationLog(_every_kind(n) for n in range(FRAME_RECORDS - 2))
    seen = []
    for inv in log:
        seen.append(inv.request_id)
        if len(log) < FRAME_RECORDS + 5:
            log.append(_every_kind(len(log)))
    assert seen == [f"r-{n}" for n in range(FRAME_RECORDS + 5)]


def test_a_history_stores_any_iterable_of_invocations_in_a_log() -> None:
    invocations = [_every_kind(n) for n in range(3)]
    history = History(invocations=invocations)
    assert isinstance(history.invocations, InvocationLog)
    assert list(history.invocations) == invocations
    history.invocations = reversed(invocations)
    assert isinstance(history.invocations, InvocationLog)
    assert list(history.invocations) == invocations[::-1]
    log = InvocationLog(invocations)
    history.invocations = log
    assert history.invocations is log
    assert "invocations=3" in repr(history)


def test_the_encoders_carry_every_field_of_every_record_kind() -> None:
    # Decoding is positional: a field added to a record kind but not to its encoder
    # would come back as its default, silently, unless a builder happened to set it.
    row = _encode_invocation(_every_kind(1))
    assert len(row) == len(dataclasses.fields(Invocation))
    kinds = {2: Record, 8: WriteRecord, 12: ReadRecord, 13: UnobservedCall, 14: ObserverFault}
    for position, kind in kinds.items():
        assert row[position], kind  # the builder fills every kind
        assert {len(part) for part in row[position]} == {len(dataclasses.fields(kind))}, kind
