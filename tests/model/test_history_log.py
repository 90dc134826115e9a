"""The history's logs: framed records come back equal, in order, one frame at a time."""

from __future__ import annotations

import dataclasses
import marshal
import zlib

import pytest

from loadtest.model.history.frames import (
    decode_effect,
    encode_ack,
    encode_dead_letter,
    encode_effect,
    encode_invocation,
    encode_sent,
)
from loadtest.model.history.log import (
    FRAME_RECORDS,
    Ack,
    DeadLetter,
    EffectKind,
    EffectRecord,
    History,
    Invocation,
    InvocationLog,
    InvocationOutcome,
    ObserverFault,
    ReadRecord,
    Record,
    RecordLog,
    SentMessage,
    SideWrite,
    UnobservedCall,
    WorkLeft,
    WriteOutcome,
    WriteRecord,
)
from loadtest.spool import FileFrames
from tests.model.builders import invocation, order_item, record, sent, write


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
        side_writes=(
            SideWrite(
                "UpdateItem",
                "stock",
                1,
                f"r-{n}",
                key={"sku": {"S": f"s-{n}"}},
                before="-",
                after="1a2b",
                changed=True,
                record_id=f"m-{n}",
                adds=True,
                moves={"reserved": str(n)},
            ),
        ),
        effects=(
            EffectRecord(
                "SNS.PublishBatch",
                EffectKind.TOPIC,
                "arn:aws:sns:us-east-1:000000000000:orders",
                f'{{"id": "o-{n % 7}"}}',
                n % 2 == 0,
                n,
                n + 1,
                key="",
                dedup_id=f"o-{n % 7}",
                group_id="g",
                error_code=None if n % 2 == 0 else "InternalError",
                call_id=f"c-{n}",
                request_id=f"r-{n}",
                record_id=f"m-{n}",
                message_attributes=(("orderId", f"o-{n % 7}"),),
                subject=f"Order o-{n % 7} placed",
            ),
        ),
        left_work=(WorkLeft(f"e-{n}", f"m-{n}", "thread 'announcer'"),),
        ended_work=(f"e-{n - 1}",),
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
    assert len(log._frames) == 1
    frame = log._frames[0]
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
    row = encode_invocation(_every_kind(1))
    assert len(row) == len(dataclasses.fields(Invocation))
    kinds = {
        2: Record,
        8: WriteRecord,
        12: ReadRecord,
        13: UnobservedCall,
        14: ObserverFault,
        15: SideWrite,
        16: EffectRecord,
        17: WorkLeft,
    }
    for position, kind in kinds.items():
        assert row[position], kind  # the builder fills every kind
        assert {len(part) for part in row[position]} == {len(dataclasses.fields(kind))}, kind


def test_an_effect_without_message_attributes_or_subject_keeps_the_row_it_always_had() -> None:
    every = _every_kind(1).effects[0]
    attributes_only = dataclasses.replace(every, subject="")
    subject_only = dataclasses.replace(every, message_attributes=())
    neither = dataclasses.replace(every, message_attributes=(), subject="")
    assert len(encode_effect(neither)) == len(encode_effect(attributes_only)) - 1
    assert len(encode_effect(subject_only)) == len(encode_effect(every))
    for effect in (every, attributes_only, subject_only, neither):
        assert decode_effect(encode_effect(effect)) == effect


def test_a_side_write_counted_only_keeps_the_row_it_always_had() -> None:
    counted = SideWrite("BatchWriteItem", "locks", 3, "r-1")
    assert encode_invocation(dataclasses.replace(_every_kind(1), side_writes=(counted,)))[15] == (
        ("BatchWriteItem", "locks", 3, "r-1"),
    )
    (moving,) = _every_kind(1).side_writes
    unmoved = dataclasses.replace(moving, moves=None)
    assert (
        len(encode_invocation(dataclasses.replace(_every_kind(1), side_writes=(unmoved,)))[15][0])
        == 10
    )
    for inv in (
        _every_kind(1),
        dataclasses.replace(_every_kind(1), side_writes=(counted,)),
        dataclasses.replace(_every_kind(1), side_writes=(unmoved,)),
    ):
        (back,) = InvocationLog([inv])
        assert back == inv


def test_an_invocation_that_left_no_work_keeps_the_row_it_always_had() -> None:
    every = _every_kind(1)
    none_left = dataclasses.replace(every, left_work=(), ended_work=())
    nothing_sent = dataclasses.replace(every, effects=())
    assert len(encode_invocation(none_left)) == len(encode_invocation(every)) - 2
    assert len(encode_invocation(dataclasses.replace(none_left, effects=()))) == 16
    for inv in (every, none_left, nothing_sent):
        (back,) = InvocationLog([inv])
        assert back == inv


def test_the_encoders_of_sent_messages_acks_and_dead_letters_carry_every_field() -> None:
    message = sent(3, "o-1", "m-3", poison=True)
    assert len(encode_sent(message)) == len(dataclasses.fields(SentMessage))
    assert len(encode_ack(Ack("m-1", 2, 1))) == len(dataclasses.fields(Ack))
    assert len(encode_dead_letter(DeadLetter("m-1", 3, 9))) == len(dataclasses.fields(DeadLetter))


def test_every_log_of_a_history_frames_its_records_and_gives_them_back() -> None:
    n = FRAME_RECORDS + 7
    messages = [
        dataclasses.replace(
            sent(i, f"o-{i}" if i % 9 else None, f"m-{i}" if i % 5 else None),
            send_error=None if i % 5 else "refused",
            poison=i % 11 == 0,
        )
        for i in range(n)
    ]
    acks = [Ack(f"m-{i}", 10 * i, None if i % 3 else 10 * i - 1) for i in range(n)]
    dead = [DeadLetter(f"m-{i}", i % 4, 7 * i) for i in range(n)]
    history = History(sent=messages, acks=acks, dead_letters=dead)
    for log, records in (
        (history.sent, messages),
        (history.acks, acks),
        (history.dead_letters, dead),
    ):
        assert len(log._frames) == 1
        assert list(log) == records
        assert log == records and records == log
        assert log[FRAME_RECORDS - 1 :] == records[FRAME_RECORDS - 1 :]
        assert log[2:-2:3] == records[2:-2:3]
        assert log[-1] == records[-1]
    assert history.acks != acks[:-1]
    history.acks = []
    assert history.acks == [] and not history.acks


def test_a_history_on_file_frames_keeps_its_frames_out_of_memory() -> None:
    history = History(frames=FileFrames)
    originals = [_every_kind(n) for n in range(2 * FRAME_RECORDS + 1)]
    history.invocations.extend(originals)
    history.acks.extend(Ack(f"m-{i}", i) for i in range(FRAME_RECORDS))
    frames = history.invocations._frames
    assert isinstance(frames, FileFrames) and len(frames) == 2
    assert isinstance(history.acks._frames, FileFrames)
    assert list(history.invocations) == originals
    assert history.invocations[FRAME_RECORDS] == originals[FRAME_RECORDS]
    assert [a.acked_ns for a in history.acks] == list(range(FRAME_RECORDS))
    # A log assigned later keeps its history's store.
    history.sent = [sent(i, "o", f"m-{i}") for i in range(FRAME_RECORDS)]
    assert isinstance(history.sent._frames, FileFrames) and len(history.sent._frames) == 1


def test_file_frames_come_back_by_position_while_more_are_appended() -> None:
    frames = FileFrames()
    assert len(frames) == 0
    frames.append(b"first")
    frames.append(b"")
    assert frames[0] == b"first"
    frames.append(b"third frame")
    assert [frames[i] for i in range(len(frames))] == [b"first", b"", b"third frame"]
    assert frames[-1] == b"third frame"


@pytest.mark.parametrize(
    ("start", "stop"),
    [
        (0, None),
        (0, 0),
        (5, 10),
        (500, 1100),
        (1024, 1536),
        (1530, None),
        (1600, 1700),
        (1636, None),
    ],
)
def test_rows_from_start_to_stop_cross_frames_and_the_tail(start: int, stop: int | None) -> None:
    count = 3 * FRAME_RECORDS + 100
    log: RecordLog[int] = RecordLog(lambda n: (n,), lambda row: int(row[0]), range(count))
    assert [row[0] for row in log.rows(start, stop)] == list(range(count))[start:stop]


def test_invocations_without_writes_are_the_invocations_with_no_write_framed_or_not() -> None:
    originals = [_every_kind(n) for n in range(FRAME_RECORDS + 3)]
    assert all(inv.writes for inv in originals)
    log = InvocationLog(originals)
    assert list(log.without_writes()) == [dataclasses.replace(i, writes=()) for i in originals]
    assert list(log) == originals  # the log itself keeps every write


def test_invocations_reading_and_writing_are_those_with_both_framed_or_not() -> None:
    originals = [_every_kind(n) for n in range(FRAME_RECORDS + 3)]
    mixed = [
        inv
        if n % 3 == 0
        else dataclasses.replace(inv, reads=())
        if n % 3 == 1
        else dataclasses.replace(inv, writes=())
        for n, inv in enumerate(originals)
    ]
    log = InvocationLog(mixed)
    wanted = [inv for inv in mixed if inv.reads and inv.writes]
    assert 0 < len(wanted) < len(mixed)
    assert list(log.reading_and_writing()) == wanted


@pytest.mark.parametrize("kept_frames", [0, 1, 8])
def test_the_partial_readers_give_the_same_whether_frames_are_kept_decoded_or_not(
    kept_frames: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(InvocationLog, "kept_frames", kept_frames)
    originals = [_every_kind(n) for n in range(2 * FRAME_RECORDS + 3)]
    mixed = [
        inv if n % 3 else dataclasses.replace(inv, reads=()) if n % 2 else inv
        for n, inv in enumerate(originals)
    ]
    log = InvocationLog(mixed)
    list(log)  # the kept frames decoded
    assert list(log.without_writes()) == [dataclasses.replace(i, writes=()) for i in mixed]
    assert list(log.reading_and_writing()) == [i for i in mixed if i.reads and i.writes]
    assert list(log) == mixed


def test_the_first_frames_of_an_invocation_log_are_decoded_once_and_the_rest_each_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(InvocationLog, "kept_frames", 1)
    originals = [_every_kind(n) for n in range(2 * FRAME_RECORDS + 3)]
    log = InvocationLog(originals)
    first, second = list(log), list(log)
    assert first == second == originals
    assert first[0] is second[0]  # the first frame: kept decoded, shared by both passes
    assert first[FRAME_RECORDS] is not second[FRAME_RECORDS]  # the second: decoded again
    assert log[1] is first[1]


def test_a_pickled_log_carries_its_frames_not_what_is_kept_decoded() -> None:
    import pickle

    originals = [_every_kind(n) for n in range(FRAME_RECORDS + 3)]
    log = InvocationLog(originals)
    list(log)
    assert log._decoded
    copy = pickle.loads(pickle.dumps(log))
    assert copy._decoded == {}
    assert list(copy) == originals
    old = pickle.loads(pickle.dumps(log))
    del old.__dict__["_decoded"]  # a log pickled before logs kept frames decoded
    restored = pickle.loads(pickle.dumps(old))
    assert list(restored) == originals
