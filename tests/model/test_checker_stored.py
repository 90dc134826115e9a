"""loadtest.model.checker: outcomes found wherever a handler stores them, and no verdict by
guesswork when the table cannot tell a finished outcome from a half-written one."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest

from loadtest.errors import ScenarioError
from loadtest.model.checker import LiveDuplicates, Verdict, carries, check, details_of
from loadtest.model.checker.details import carries_id, stored_leaves
from loadtest.model.history.log import (
    Ack,
    EndState,
    History,
    Invocation,
    InvocationOutcome,
    OutcomeKey,
    Record,
    SentMessage,
    TypedItem,
    WriteOutcome,
    WriteRecord,
    key_string,
)
from loadtest.model.scenario.loading import parse_scenario, to_raw

ORDERS = 20


def _sent(index: int, business_id: str, body: dict[str, Any]) -> SentMessage:
    return SentMessage(
        index=index,
        business_id=business_id,
        body=json.dumps(body),
        intended_ns=index,
        sent_ns=index,
        message_id=f"m-{index}",
    )


def _put(
    item: TypedItem, key_names: tuple[str, ...], started_ns: int, request_id: str
) -> WriteRecord:
    """An unconditional put of ``item`` (its old image not returned)."""
    return WriteRecord(
        operation="PutItem",
        key={name: item[name] for name in key_names},
        condition=None,
        outcome=WriteOutcome.ACCEPTED,
        item_before=None,
        item_after=item,
        before_known=False,
        started_ns=started_ns,
        ended_ns=started_ns + 1_000,
        requested=item,
        call_id=f"c-{started_ns}",
        request_id=request_id,
    )


def _invocation(request_id: str, records: list[Record], writes: list[WriteRecord]) -> Invocation:
    return Invocation(
        request_id=request_id,
        environment=0,
        records=tuple(records),
        received_ns=0,
        started_ns=0,
        ended_ns=1,
        outcome=InvocationOutcome.SUCCESS,
        error=None,
        writes=tuple(writes),
    )


def _end(items: list[TypedItem], key_names: tuple[str, ...]) -> EndState:
    return EndState(0, 0, 0, {key_string({n: i[n] for n in key_names}): i for i in items})


def _sns(order: dict[str, Any], copy: int) -> dict[str, Any]:
    """An SNS notification as an SNS-to-SQS subscription delivers it (no raw delivery):
    each publish has its own MessageId and Timestamp."""
    return {
        "Type": "Notification",
        "MessageId": f"sns-{order['orderId']}-{copy}",
        "TopicArn": "arn:aws:sns:us-east-1:123456789012:orders",
        "Message": json.dumps(order),
        "Timestamp": f"2026-01-01T00:00:0{copy}.000Z",
        "SignatureVersion": "1",
        "Signature": "c2lnbmF0dXJl",
        "SigningCertURL": "https://sns.us-east-1.amazonaws.com/cert.pem",
        "UnsubscribeURL": "https://sns.us-east-1.amazonaws.com/?Action=Unsubscribe",
    }


def _order(n: int) -> dict[str, Any]:
    return {"orderId": f"order-{n:03d}", "customer": f"c-{n % 7}", "quantity": n % 5 + 1}


# --- where a value sits ------------------------------------------------------------------


def test_details_are_the_leaves_of_the_body_inside_a_json_string_without_the_id() -> None:
    body = json.dumps(_sns(_order(3), 0))
    details = details_of(body, business_id="order-003")
    assert details is not None
    assert details["Message.quantity"] == Decimal(4)
    assert details["Message.customer"] == "c-3"
    assert "Message.orderId" not in details
    assert details["Type"] == "Notification"


def test_an_item_is_read_inside_its_maps_lists_and_json_strings() -> None:
    item = {
        "ID": {"S": "m-1"},
        "payload": {"M": {"id": {"S": "a"}, "lines": {"L": [{"M": {"sku": {"S": "x"}}}]}}},
        "raw": {"S": '{"note": "gift"}'},
    }
    leaves = stored_leaves(item)
    assert leaves["id"] == ["a"] and leaves["sku"] == ["x"] and leaves["note"] == ["gift"]
    assert carries_id(item, {"ID": {"S": "m-1"}}, "a")
    assert not carries_id({"payload": {"M": {"id": {"S": "ab"}}}}, {}, "a")
    assert carries(item, {"lines[0].sku": "x", "note": "gift"})
    assert not carries(item, {"note": "other"})


def test_a_renamed_field_is_matched_by_value_only_where_no_other_detail_has_that_value() -> None:
    renamed = {"id": {"S": "a"}, "qty": {"N": "2"}, "cost": {"N": "7"}}
    assert carries(renamed, {"quantity": Decimal(2), "price": Decimal(7)})
    # Two details of one value: a stored 2 under another name could be either.
    assert not carries(renamed, {"quantity": Decimal(2), "count": Decimal(2)})
    # Under its own name, a shared value is no ambiguity.
    named = {"id": {"S": "a"}, "quantity": {"N": "2"}, "count": {"N": "2"}}
    assert carries(named, {"quantity": Decimal(2), "count": Decimal(2)})


# --- an SNS envelope consumer: the order is a JSON string in Message ------------------------


def _sns_batched(batch_size: int) -> tuple[History, EndState]:
    """20 orders x 2 copies, in send order (each order's copies next to each other), in
    batches of ``batch_size``; an unconditional put per record keyed on ``orderId``
    parsed from ``Message``, storing the order's fields."""
    history = History()
    sent = [
        _sent(2 * n + copy, f"order-{n:03d}", _sns(_order(n), copy))
        for n in range(ORDERS)
        for copy in (0, 1)
    ]
    history.sent = sent
    history.acks = [Ack(str(m.message_id), 1) for m in sent]
    invocations = []
    at = 0
    for start in range(0, len(sent), batch_size):
        request_id = f"r-{start}"
        records, writes = [], []
        for m in sent[start : start + batch_size]:
            assert m.message_id is not None and m.business_id is not None
            records.append(Record(m.message_id, 1, m.business_id))
            order = json.loads(json.loads(m.body)["Message"])
            item = {
                "orderId": {"S": order["orderId"]},
                "customer": {"S": order["customer"]},
                "quantity": {"N": str(order["quantity"])},
            }
            at += 10
            writes.append(_put(item, ("orderId",), at, request_id))
        invocations.append(_invocation(request_id, records, writes))
    history.invocations = invocations
    items = [
        {
            "orderId": {"S": o["orderId"]},
            "customer": {"S": o["customer"]},
            "quantity": {"N": str(o["quantity"])},
        }
        for o in map(_order, range(ORDERS))
    ]
    return history, _end(items, ("orderId",))


@pytest.mark.parametrize("batch_size", [1, 10])
def test_an_sns_envelope_consumer_writing_each_copy_is_twenty_duplicates(batch_size: int) -> None:
    history, end = _sns_batched(batch_size)
    result = check(history, end, OutcomeKey((("orderId", "{id}"),), declared=True))
    c = result.counts
    assert (c.writes_accepted, c.duplicate_writes, c.conflicting_writes) == (40, 20, 0)
    assert c.lost_outcomes == 0
    assert result.verdict is Verdict.FAIL


# --- a consumer keyed on the SQS messageId, storing the whole body as a map ----------------


def test_a_message_id_keyed_consumer_storing_the_body_as_a_map_is_sixty_duplicates() -> None:
    """20 orders x 4 copies (producer resends), one record per invocation: 80 rows."""
    history = History()
    sent = [
        _sent(4 * n + copy, f"order-{n:03d}", {"id": f"order-{n:03d}", "quantity": n % 5 + 1})
        for n in range(ORDERS)
        for copy in range(4)
    ]
    history.sent = sent
    history.acks = [Ack(str(m.message_id), 1) for m in sent]
    invocations, items = [], []
    for m in sent:
        assert m.message_id is not None and m.business_id is not None
        body = json.loads(m.body)
        item = {
            "ID": {"S": m.message_id},
            "payload": {"M": {"id": {"S": body["id"]}, "quantity": {"N": str(body["quantity"])}}},
        }
        items.append(item)
        request_id = f"r-{m.index}"
        invocations.append(
            _invocation(
                request_id,
                [Record(m.message_id, 1, m.business_id)],
                [_put(item, ("ID",), 10 * m.index, request_id)],
            )
        )
    history.invocations = invocations
    # The table's key is ID: the scenario names it as the outcome key (the only way to).
    result = check(history, _end(items, ("ID",)), OutcomeKey((("ID", "{id}"),), declared=True))
    c = result.counts
    assert (c.writes_accepted, c.duplicate_writes, c.lost_outcomes) == (80, 60, 0)
    assert c.conflicting_writes == 0
    assert result.verdict is Verdict.FAIL
    assert "ID={messageId}" in result.outcome


# --- no verdict by guesswork ----------------------------------------------------------------


def _half_written(outcome_key: OutcomeKey, *, finished: bool) -> Any:
    """5 orders, each claimed with a status and (``finished``) completed with a total the
    consumer computes: no stored value is one of the body's."""
    history = History()
    sent = [_sent(n, f"o-{n}", {"id": f"o-{n}", "quantity": 3}) for n in range(5)]
    history.sent = sent
    history.acks = [Ack(str(m.message_id), 1) for m in sent]
    invocations, items = [], []
    for m in sent:
        assert m.message_id is not None and m.business_id is not None
        item: TypedItem = {"id": {"S": m.business_id}, "status": {"S": "PENDING"}}
        if finished:
            item = {"id": item["id"], "status": {"S": "DONE"}, "total_cents": {"N": "850"}}
        items.append(item)
        request_id = f"r-{m.index}"
        invocations.append(
            _invocation(
                request_id,
                [Record(m.message_id, 1, m.business_id)],
                [_put(item, ("id",), m.index, request_id)],
            )
        )
    history.invocations = invocations
    return check(history, _end(items, ("id",)), outcome_key)


def test_outcomes_holding_none_of_the_details_are_inconclusive_with_the_fix_named() -> None:
    for outcome_key in (OutcomeKey(), OutcomeKey(declared=True)):
        result = _half_written(outcome_key, finished=False)
        assert result.verdict is Verdict.INCONCLUSIVE
        assert result.counts.lost_outcomes == 0
        assert any("[outcome] fields" in reason for reason in result.inconclusive)


def test_declared_outcome_fields_judge_the_same_consumer() -> None:
    declared = OutcomeKey(fields=("status", "total_cents"))
    half = _half_written(declared, finished=False)
    assert half.verdict is Verdict.FAIL
    assert half.counts.lost_outcomes == 5
    done = _half_written(declared, finished=True)
    assert done.verdict is Verdict.PASS, (done.reasons, done.inconclusive)
    assert done.counts.lost_outcomes == 0
    assert any("fields the scenario declares" in note for note in done.notes)


def test_outcome_fields_are_read_from_the_scenario_and_written_back() -> None:
    scenario = parse_scenario({"outcome": {"fields": ["status", "total_cents"]}}, source="mem")
    assert scenario.outcome.fields == ("status", "total_cents")
    assert not scenario.outcome.declared
    raw = to_raw(scenario)
    assert raw["outcome"] == {"fields": ["status", "total_cents"]}
    assert parse_scenario(raw, source="mem").outcome == scenario.outcome
    for bad in ("status", ["status", "status"], ["no spaces"], [1]):
        with pytest.raises(ScenarioError, match=r"mem: outcome\.fields"):
            parse_scenario({"outcome": {"fields": bad}}, source="mem")


# --- attribution inside a batch --------------------------------------------------------------


def _claims_then_results(marks: tuple[str, str, str, str], *, guarded: bool = False) -> Any:
    """Two copies of one order in one batch, processed side by side (a task per record):
    both claim the order (an unconditional put of a PENDING item), then both store the
    result (``guarded``: only over a PENDING claim, so the second is refused). ``marks``:
    the record each write was marked with ("" for none)."""
    history = History()
    body = {"id": "a", "quantity": 3}
    history.sent = [_sent(0, "a", body), _sent(1, "a", body)]
    history.acks = [Ack("m-0", 1), Ack("m-1", 1)]
    claim: TypedItem = {"id": {"S": "a"}, "status": {"S": "PENDING"}}
    done: TypedItem = {"id": {"S": "a"}, "status": {"S": "DONE"}, "quantity": {"N": "3"}}

    def put(item: TypedItem, before: TypedItem | None, at: int, mark: str) -> WriteRecord:
        w = _put(item, ("id",), at, "r-1")
        return WriteRecord(
            **{
                **{f: getattr(w, f) for f in w.__dataclass_fields__},
                "item_before": before,
                "before_known": True,
                "record_id": mark,
            }
        )

    writes = [
        put(claim, None, 1, marks[0]),
        put(claim, claim, 2, marks[1]),
        put(done, claim, 3, marks[2]),
        put(done, done, 4, marks[3]),
    ]
    if guarded:
        refused = writes[3]
        writes[3] = WriteRecord(
            **{
                **{f: getattr(refused, f) for f in refused.__dataclass_fields__},
                "outcome": WriteOutcome.REJECTED,
                "item_after": done,
                "condition": "#s = :pending",
            }
        )
    history.invocations = [
        _invocation("r-1", [Record("m-0", 1, "a"), Record("m-1", 1, "a")], writes)
    ]
    return check(history, _end([done], ("id",)))


def test_marks_tie_each_write_of_a_batch_to_its_record() -> None:
    result = _claims_then_results(("m-0", "m-1", "m-0", "m-1"))
    assert [d.role.value for d in result.decisions] == ["first", "again", "step", "step"]
    assert result.counts.duplicate_writes == 1
    assert result.verdict is Verdict.FAIL


def test_a_batch_no_mark_ties_to_its_records_is_inconclusive_not_a_pass() -> None:
    # No marks (an environment that could not tell), or every write marked with the last
    # record read (a handler that parsed the whole batch before writing).
    for marks in (("", "", "", ""), ("m-1", "m-1", "m-1", "m-1")):
        result = _claims_then_results(marks)
        # Read without marks, the second claim finds the first's (no details yet): a step,
        # for all the checker can tell; the last result finds a finished order: the
        # second copy's. The two steps are guesses: the run cannot pass.
        assert [d.role.value for d in result.decisions] == ["first", "step", "step", "again"]
        assert result.counts.duplicate_writes == 1
        assert result.verdict is Verdict.FAIL
        assert any("2 write(s)" in r and "batch_size = 1" in r for r in result.inconclusive)
        # With the second result refused, nothing but the marks could show the duplicate
        # claim: inconclusive, where reading the steps as one delivery's passed.
        guarded = _claims_then_results(marks, guarded=True)
        assert [d.role.value for d in guarded.decisions] == ["first", "step", "step", "rejected"]
        assert guarded.counts.duplicate_writes == 0
        assert guarded.verdict is Verdict.INCONCLUSIVE, guarded.reasons


def test_marks_find_the_duplicate_claim_a_refused_result_hides() -> None:
    result = _claims_then_results(("m-0", "m-1", "m-0", "m-1"), guarded=True)
    assert [d.role.value for d in result.decisions] == ["first", "again", "step", "rejected"]
    assert result.counts.duplicate_writes == 1
    assert result.verdict is Verdict.FAIL


def test_marks_on_the_sns_consumer_agree_with_what_it_stored() -> None:
    history, end = _sns_batched(10)
    history.invocations = [
        Invocation(
            **{
                **{f: getattr(inv, f) for f in inv.__dataclass_fields__},
                "writes": tuple(
                    WriteRecord(
                        **{
                            **{f: getattr(w, f) for f in w.__dataclass_fields__},
                            "record_id": r.message_id,
                        }
                    )
                    for w, r in zip(inv.writes, inv.records, strict=True)
                ),
            }
        )
        for inv in history.invocations
    ]
    result = check(history, end, OutcomeKey((("orderId", "{id}"),), declared=True))
    assert (result.counts.duplicate_writes, result.counts.lost_outcomes) == (20, 0)
    assert result.verdict is Verdict.FAIL


def test_the_live_count_counts_each_marked_record_of_a_batch_as_its_delivery() -> None:
    item: TypedItem = {"id": {"S": "a"}, "quantity": {"N": "3"}}

    def put(at: int, mark: str) -> WriteRecord:
        w = _put(item, ("id",), at, "r-1")
        return WriteRecord(
            **{**{f: getattr(w, f) for f in w.__dataclass_fields__}, "record_id": mark}
        )

    marked, unmarked = LiveDuplicates(), LiveDuplicates()
    marked.add([put(1, "m-0"), put(2, "m-0"), put(3, "m-1")])
    unmarked.add([put(1, ""), put(2, ""), put(3, "")])
    assert (marked.duplicate_writes, unmarked.duplicate_writes) == (1, 0)


def test_a_side_write_in_a_batch_is_shown_as_made_for_the_record_it_names() -> None:
    history = History()
    history.sent = [_sent(n, f"o-{n}", {"id": f"o-{n}", "quantity": 1}) for n in range(2)]
    history.acks = [Ack("m-0", 1), Ack("m-1", 1)]
    order: TypedItem = {"id": {"S": "o-1"}, "quantity": {"N": "1"}}
    audit: TypedItem = {"id": {"S": "audit-7"}, "event": {"S": "received"}}
    writes = [
        WriteRecord(
            **{
                **{f: getattr(w, f) for f in w.__dataclass_fields__},
                "record_id": "m-1",
            }
        )
        for w in (_put(audit, ("id",), 1, "r-1"), _put(order, ("id",), 2, "r-1"))
    ]
    history.invocations = [
        _invocation("r-1", [Record("m-0", 1, "o-0"), Record("m-1", 1, "o-1")], writes)
    ]
    result = check(history, _end([audit, order], ("id",)))
    side = next(d for d in result.decisions if d.role.value == "side")
    assert side.message_id == "m-1"
