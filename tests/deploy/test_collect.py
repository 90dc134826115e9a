"""The collector's rebuild of a history from a deployed function's lines (pure, no backend)."""

from __future__ import annotations

import json
from typing import Any

from loadtest.deploy.collect import (
    NEVER_ENDED,
    Collector,
    InvocationEnd,
    InvocationStart,
    acked_ids,
)
from loadtest.model.history.log import History, InvocationOutcome, SentMessage, WriteOutcome

OFFSET = 1_000_000_000_000


def _start(request_id: str, *records: tuple[str, int], at: int = 0) -> str:
    return json.dumps(
        {
            "t": "invoke",
            "request_id": request_id,
            "env": "e1",
            "records": [{"message_id": m, "receive_count": c, "sent_ms": 0} for m, c in records],
            "started_ns": OFFSET + at,
        }
    )


def _end(
    request_id: str,
    outcome: str = "ok",
    *,
    failed: tuple[str, ...] = (),
    lines: int = 0,
    at: int = 100,
) -> str:
    return json.dumps(
        {
            "t": "invoked",
            "request_id": request_id,
            "outcome": outcome,
            "failed": list(failed),
            "error": "ValueError: no" if outcome == "exception" else None,
            "ended_ns": OFFSET + at,
            "lines": lines,
        }
    )


def _write(request_id: str, at: int = 50, outcome: str = "accepted") -> str:
    body: dict[str, Any] = {
        "t": "write",
        "operation": "PutItem",
        "key": {"id": {"S": "a"}},
        "condition": None,
        "outcome": outcome,
        "item_before": None,
        "item_after": {"id": {"S": "a"}},
        "before_known": True,
        "started_ns": OFFSET + at,
        "ended_ns": OFFSET + at + 5,
        "call_id": f"c-{request_id}",
        "request_id": request_id,
    }
    return json.dumps(body)


def _begin(request_id: str, at: int = 60) -> str:
    return json.dumps(
        {
            "t": "begin",
            "call_id": f"b-{request_id}",
            "operation": "PutItem",
            "request_id": request_id,
            "started_ns": OFFSET + at,
            "keys": [{"id": {"S": "a"}}],
            "requested": [{"id": {"S": "a"}}],
        }
    )


def _history() -> History:
    return History(
        sent=[SentMessage(i, "a", "{}", 0, 0, f"m{i}") for i in (1, 2, 3)],
    )


def test_a_success_acks_the_batch_and_times_move_to_the_local_clock() -> None:
    c = Collector(partial=False, wall_offset_ns=OFFSET)
    assert c.add(_start("r1", ("m1", 1), ("m2", 2), at=10)) == []
    assert c.add(_write("r1")) == []
    assert c.missing_lines() == 0
    assert c.add(_end("r1", lines=1, at=200)) == ["m1", "m2"]
    history = _history()
    c.build(history, ended_ns=999)
    (inv,) = history.invocations
    assert (inv.started_ns, inv.ended_ns, inv.outcome) == (10, 200, InvocationOutcome.SUCCESS)
    assert [(r.message_id, r.receive_count, r.business_id) for r in inv.records] == [
        ("m1", 1, "a"),
        ("m2", 2, "a"),
    ]
    assert [(w.started_ns, w.ended_ns) for w in inv.writes] == [(50, 55)]
    assert [(a.message_id, a.acked_ns) for a in history.acks] == [("m1", 200), ("m2", 200)]


def test_lines_announced_by_an_end_are_awaited() -> None:
    c = Collector(partial=False, wall_offset_ns=OFFSET)
    c.add(_start("r1", ("m1", 1)))
    c.add(_end("r1", lines=2))
    assert c.missing_lines() == 2
    c.add(_write("r1"))
    assert c.missing_lines() == 1


def test_partial_batch_responses_follow_the_mapping_setting() -> None:
    start = InvocationStart("r", "e", (("m1", 1, 0), ("m2", 1, 0)), 0)
    failed = InvocationEnd("r", "batchItemFailures", ("m2",), None, 1, 0)
    assert acked_ids(start, failed, partial=True) == ["m1"]
    assert acked_ids(start, failed, partial=False) == ["m1", "m2"]  # the response is ignored
    stranger = InvocationEnd("r", "batchItemFailures", ("zz",), None, 1, 0)
    assert acked_ids(start, stranger, partial=True) == []  # Lambda fails the whole batch
    raised = InvocationEnd("r", "exception", (), "ValueError", 1, 0)
    assert acked_ids(start, raised, partial=True) == []


def test_an_invocation_that_never_ended_timed_out_and_its_unanswered_write_is_indeterminate() -> (
    None
):
    c = Collector(partial=False, wall_offset_ns=OFFSET)
    c.add(_start("r1", ("m1", 1), at=10))
    c.add(_begin("r1"))
    assert c.never_ended() == ["r1"]
    history = _history()
    c.build(history, ended_ns=500)
    (inv,) = history.invocations
    assert (inv.outcome, inv.error, inv.ended_ns) == (InvocationOutcome.TIMEOUT, NEVER_ENDED, 500)
    (write,) = inv.writes
    assert (write.outcome, write.started_ns, write.ended_ns) == (
        WriteOutcome.INDETERMINATE,
        60,
        500,
    )
    assert history.acks == []


def test_dead_letters_count_once_and_writes_without_a_start_are_kept() -> None:
    c = Collector(partial=False, wall_offset_ns=OFFSET)
    assert c.add_dead_letter("m3", 3, 7) is True
    assert c.add_dead_letter("m3", 3, 8) is False
    c.add(_write("ghost"))
    c.add("not json at all")
    assert (c.orphans(), c.unreadable, c.settled()) == (1, 1, {"m3"})
    history = _history()
    c.build(history, ended_ns=100)
    assert [(d.message_id, d.seen_ns) for d in history.dead_letters] == [("m3", 7)]
    (ghost,) = history.invocations
    assert ghost.records == () and len(ghost.writes) == 1


def test_calls_refused_for_what_the_run_lacks_reach_the_invocations_log() -> None:
    c = Collector(partial=True, wall_offset_ns=OFFSET)
    c.add(_start("r1", ("m1", 1)))
    line = "loadtest: the handler's PutItem call on 'Orders' failed with ResourceNotFoundException"
    end = json.loads(_end("r1", "batchItemFailures", failed=("m1",)))
    c.add(json.dumps({**end, "missing": [line]}))
    history = _history()
    c.build(history, ended_ns=999)
    (inv,) = history.invocations
    assert inv.log_tail == line + "\n"
    assert inv.error is None


def test_a_message_the_function_sent_to_its_own_queue_is_handed_over_once() -> None:
    c = Collector(partial=False, wall_offset_ns=OFFSET)
    effect = {
        "t": "effect",
        "operation": "SQS.SendMessage",
        "kind": "source",
        "sink": "https://q/jobs",
        "payload": "{}",
        "accepted": True,
        "started_ns": OFFSET + 10,
        "ended_ns": OFFSET + 20,
        "key": "deferred-1",
        "request_id": "r1",
    }
    # Its line may come before its invocation's start and end: the run learns of it then.
    assert c.add(json.dumps(effect)) == []
    assert c.take_resent() == ["deferred-1"]
    assert c.take_resent() == []
    assert c.add(_start("r1", ("m1", 1))) == []
    assert c.add(_end("r1", lines=1)) == ["m1"]
    refused = {**effect, "accepted": False, "key": "", "request_id": "r2"}
    c.add(json.dumps(refused))
    assert c.take_resent() == []


def test_a_message_the_function_deleted_itself_is_acknowledged_by_that_delete() -> None:
    c = Collector(partial=False, wall_offset_ns=OFFSET)
    delete = {
        "t": "effect",
        "operation": "SQS.DeleteMessage",
        "kind": "source",
        "sink": "https://q/jobs",
        "payload": "",
        "accepted": True,
        "started_ns": OFFSET + 10,
        "ended_ns": OFFSET + 20,
        "key": "m1",
        "request_id": "r1",
    }
    assert c.add(_start("r1", ("m1", 1), ("m2", 1))) == []
    # Acknowledged when its line comes, whatever the invocation does next: it fails, and
    # only the message it did not delete is left to come back.
    assert c.add(json.dumps(delete)) == ["m1"]
    assert c.take_resent() == []
    assert c.add(_end("r1", "exception", lines=1)) == []
    assert c.acked == {"m1": 20}
    assert c.add(json.dumps({**delete, "accepted": False, "key": "m2"})) == []
