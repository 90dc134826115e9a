"""loadtest.checker: counts and verdicts on synthetic histories."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from loadtest.checker import Check, Counts, Verdict, attribute, check, duplicate_evidence
from loadtest.history import (
    Ack,
    DeadLetter,
    EndState,
    History,
    InvocationOutcome,
    WriteOutcome,
)
from tests.core.core_builders import (
    end_state,
    invocation,
    lab_history,
    order_item,
    record,
    sent,
    write,
)


def history_of(
    sent_ids: list[tuple[str, str]],
    acked: list[str] | None = None,
) -> History:
    """sent_ids: (message_id, business_id) pairs, all acked unless ``acked`` says otherwise."""
    history = History()
    history.sent = [sent(i, bid, mid) for i, (mid, bid) in enumerate(sent_ids)]
    ack_ids = [mid for mid, _ in sent_ids] if acked is None else acked
    history.acks = [Ack(message_id=mid, acked_ns=100) for mid in ack_ids]
    return history


def test_the_lab_run_passes_with_two_accepted_and_two_rejected() -> None:
    history, end = lab_history()
    result = check(history, end)
    assert result.counts == Counts(
        messages_sent=4,
        distinct_ids=2,
        deliveries=4,
        redeliveries=0,
        writes_attempted=4,
        writes_accepted=2,
        writes_rejected=2,
        writes_errored=0,
        duplicate_writes=0,
        conflicting_writes=0,
        lost_outcomes=0,
        acked=4,
        dead_lettered=0,
        handler_errors=0,
        unsettled=0,
        send_failures=0,
        unattributed_writes=0,
    )
    assert result.verdict is Verdict.PASS
    assert result.reasons == ()
    assert [(aw.business_id, aw.message_id) for aw in result.writes] == [
        ("dedup-order", "m-1"),
        ("dedup-order", "m-2"),
        ("dedup-order", "m-3"),
        ("other-order", "m-4"),
    ]
    assert duplicate_evidence(result) == []


def test_counts_as_dict_has_every_count() -> None:
    history, end = lab_history()
    counts = check(history, end).counts.as_dict()
    assert counts["duplicate_writes"] == 0
    assert counts["writes_accepted"] == 2
    assert len(counts) == 17
    assert all(type(v) is int for v in counts.values())


def racy_double_write(second_quantity: int) -> tuple[History, EndState]:
    """read-then-write: two deliveries both read "absent"; the second overwrites the first."""
    first = order_item("dedup-order", 4)
    second = order_item("dedup-order", second_quantity)
    history = history_of([("m-1", "dedup-order"), ("m-2", "dedup-order")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "dedup-order")],
            [write(first, condition=None, before=None, before_known=True, started_ns=10)],
        ),
        invocation(
            "r-2",
            [record("m-2", "dedup-order")],
            [write(second, condition=None, before=first, before_known=True, started_ns=20)],
        ),
    ]
    return history, end_state([second])


def test_racy_double_write_of_identical_details_is_a_duplicate_not_a_conflict() -> None:
    result = check(*racy_double_write(4))
    assert result.counts.writes_accepted == 2
    assert result.counts.duplicate_writes == 1
    assert result.counts.conflicting_writes == 0
    assert result.counts.lost_outcomes == 0
    assert result.verdict is Verdict.FAIL
    assert result.reasons == ("1 duplicate write(s): an outcome was written again",)


def test_overwrite_with_different_details_is_conflicting() -> None:
    result = check(*racy_double_write(5))
    assert result.counts.duplicate_writes == 1
    assert result.counts.conflicting_writes == 1
    assert result.verdict is Verdict.FAIL
    assert result.reasons == (
        "1 duplicate write(s): an outcome was written again",
        "1 conflicting write(s): stored details were silently replaced",
    )


def test_unknown_before_image_is_not_counted_as_conflicting() -> None:
    first = order_item("a", 4)
    history = history_of([("m-1", "a"), ("m-2", "a")])
    history.invocations = [
        invocation("r-1", [record("m-1", "a")], [write(first, condition=None)]),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [write(order_item("a", 5), condition=None, before=first, before_known=False)],
        ),
    ]
    result = check(history, end_state([order_item("a", 5)]))
    assert result.counts.duplicate_writes == 1
    assert result.counts.conflicting_writes == 0


def test_acked_without_an_accepted_write_is_lost() -> None:
    history = history_of([("m-1", "a"), ("m-2", "b")])
    history.invocations = [
        invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))]),
        invocation("r-2", [record("m-2", "b")], []),
    ]
    result = check(history, end_state([order_item("a", 1)]))
    assert result.counts.lost_outcomes == 1
    assert result.counts.acked == 2
    assert result.verdict is Verdict.FAIL
    assert result.reasons == ("1 lost outcome(s): acknowledged but not stored",)


def test_rejected_write_only_is_lost() -> None:
    history = history_of([("m-1", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a")],
            [write(order_item("a", 1), outcome=WriteOutcome.REJECTED, before=None)],
        ),
    ]
    result = check(history, end_state([]))
    assert result.counts.writes_rejected == 1
    assert result.counts.lost_outcomes == 1


def test_accepted_write_whose_item_is_gone_is_lost() -> None:
    history = history_of([("m-1", "a")])
    history.invocations = [invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))])]
    result = check(history, end_state([]))
    assert result.counts.writes_accepted == 1
    assert result.counts.lost_outcomes == 1
    assert result.verdict is Verdict.FAIL


def test_accepted_delete_does_not_store_an_outcome() -> None:
    history = history_of([("m-1", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a")],
            [write(order_item("a", 1), operation="DeleteItem", condition=None)],
        ),
    ]
    result = check(history, end_state([order_item("a", 1)]))
    assert result.counts.writes_accepted == 1
    assert result.counts.duplicate_writes == 0
    assert result.counts.lost_outcomes == 1


def test_unsettled_message_fails_the_run() -> None:
    history = history_of([("m-1", "a"), ("m-2", "b")], acked=["m-1"])
    history.invocations = [invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))])]
    result = check(history, end_state([order_item("a", 1)]))
    assert result.counts.unsettled == 1
    assert result.counts.acked == 1
    assert result.counts.lost_outcomes == 0
    assert result.verdict is Verdict.FAIL
    assert result.reasons == ("1 message(s) neither acknowledged nor dead-lettered",)


def test_unsettled_after_the_deadline_says_so() -> None:
    history = history_of([("m-1", "a")], acked=[])
    history.timed_out = True
    result = check(history, end_state([]))
    assert result.reasons == (
        "1 message(s) neither acknowledged nor dead-lettered (the run's deadline passed)",
    )


def test_dead_lettered_message_is_settled_and_not_lost() -> None:
    history = history_of([("m-1", "a")], acked=[])
    history.sent[0] = sent(0, None, "m-1")
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", None, receive_count=n)],
            [],
            outcome=InvocationOutcome.ERROR,
            error="ValueError: Use an id and quantity",
        )
        for n in (1, 2, 3)
    ]
    history.dead_letters = [DeadLetter(message_id="m-1", receive_count=3, seen_ns=5)]
    result = check(history, end_state([]))
    assert result.counts.dead_lettered == 1
    assert result.counts.unsettled == 0
    assert result.counts.lost_outcomes == 0
    assert result.counts.handler_errors == 3
    assert result.counts.deliveries == 3
    assert result.counts.redeliveries == 2
    assert result.counts.distinct_ids == 0
    assert result.verdict is Verdict.PASS


def test_send_failures_fail_the_run() -> None:
    history = history_of([("m-1", "a")])
    history.sent.append(sent(1, "b", None))
    history.invocations = [invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))])]
    result = check(history, end_state([order_item("a", 1)]))
    assert result.counts.messages_sent == 1
    assert result.counts.send_failures == 1
    assert result.verdict is Verdict.FAIL
    assert result.reasons == ("1 message(s) could not be sent",)


def test_redeliveries_count_receive_counts_above_one() -> None:
    history = history_of([("m-1", "a"), ("m-2", "b")])
    item_a, item_b = order_item("a", 1), order_item("b", 2)
    history.invocations = [
        invocation("r-1", [record("m-1", "a", 1)], [], outcome=InvocationOutcome.TIMEOUT),
        invocation("r-2", [record("m-1", "a", 2)], [write(item_a)]),
        invocation("r-3", [record("m-2", "b", 1)], [], outcome=InvocationOutcome.CRASH),
        invocation("r-4", [record("m-2", "b", 2)], [], outcome=InvocationOutcome.ERROR),
        invocation("r-5", [record("m-2", "b", 3)], [write(item_b)]),
    ]
    result = check(history, end_state([item_a, item_b]))
    assert result.counts.deliveries == 5
    assert result.counts.redeliveries == 3
    assert result.counts.handler_errors == 3
    assert result.verdict is Verdict.PASS


def test_attribution_by_key_in_a_batch() -> None:
    a, b = order_item("a", 1), order_item("b", 2)
    inv = invocation("r-1", [record("m-1", "a"), record("m-2", "b")], [write(b), write(a)])
    assert attribute(inv, inv.writes[0]) == ("b", "m-2")
    assert attribute(inv, inv.writes[1]) == ("a", "m-1")


def test_attribution_by_item_attribute_when_keyed_by_message_id() -> None:
    # A consumer that (wrongly) keys items by messageId keeps the business id in an attribute.
    def by_message(message_id: str, order_id: str) -> dict[str, object]:
        return {"id": {"S": message_id}, "order_id": {"S": order_id}, "quantity": {"N": "1"}}

    item_1, item_2 = by_message("m-1", "a"), by_message("m-2", "a")
    history = history_of([("m-1", "a"), ("m-2", "a"), ("m-3", "b")])
    history.invocations = [
        invocation("r-1", [record("m-3", "b"), record("m-1", "a")], [write(item_1)]),
        invocation("r-2", [record("m-2", "a")], [write(item_2)]),
    ]
    inv = history.invocations[0]
    assert attribute(inv, inv.writes[0]) == ("a", "m-1")
    result = check(history, EndState(0, 0, 0, {"m-1": item_1, "m-2": item_2}))
    # Two accepted writes of business id "a" under two keys: written twice.
    assert result.counts.duplicate_writes == 1
    assert result.counts.unattributed_writes == 0
    # "b" was acknowledged and never written.
    assert result.counts.lost_outcomes == 1


def test_unattributed_write_in_a_multi_record_batch() -> None:
    stray = order_item("zzz", 1)
    inv = invocation("r-1", [record("m-1", "a"), record("m-2", "b")], [write(stray)])
    assert attribute(inv, inv.writes[0]) == (None, None)
    history = history_of([("m-1", "a"), ("m-2", "b")])
    history.invocations = [inv]
    result = check(history, end_state([stray]))
    assert result.counts.unattributed_writes == 1
    assert result.counts.writes_accepted == 1
    assert result.counts.duplicate_writes == 0
    assert result.counts.lost_outcomes == 2
    assert result.writes[0].business_id is None
    assert result.writes[0].message_id is None


def test_single_record_invocation_takes_any_write() -> None:
    stray = {"pk": {"S": "whatever"}}
    inv = invocation("r-1", [record("m-1", "a")], [write(stray, write_key=stray)])
    assert attribute(inv, inv.writes[0]) == ("a", "m-1")


def test_duplicate_evidence_lists_only_ids_written_twice() -> None:
    history, end = racy_double_write(4)
    # Add a second id written once.
    history.sent.append(sent(2, "b", "m-3"))
    history.acks.append(Ack(message_id="m-3", acked_ns=100))
    history.invocations.append(invocation("r-3", [record("m-3", "b")], [write(order_item("b", 1))]))
    end.table_items["b"] = order_item("b", 1)
    result = check(history, end)
    evidence = duplicate_evidence(result)
    assert [e["business_id"] for e in evidence] == ["dedup-order"]
    assert evidence[0]["accepted_writes"] == 2
    assert [w["request_id"] for w in evidence[0]["writes"]] == ["r-1", "r-2"]
    assert [w["message_id"] for w in evidence[0]["writes"]] == ["m-1", "m-2"]
    assert evidence[0]["writes"][1]["item_before"] == order_item("dedup-order", 4)
    assert evidence[0]["writes"][1]["outcome"] == "accepted"


def test_duplicate_evidence_respects_the_limit() -> None:
    ids = [f"id-{n}" for n in range(5)]
    history = history_of([(f"m-{i}-{c}", bid) for i, bid in enumerate(ids) for c in (0, 1)])
    history.invocations = [
        invocation(
            f"r-{i}-{c}", [record(f"m-{i}-{c}", bid)], [write(order_item(bid, 1), condition=None)]
        )
        for i, bid in enumerate(ids)
        for c in (0, 1)
    ]
    result = check(history, end_state([order_item(bid, 1) for bid in ids]))
    assert result.counts.duplicate_writes == 5
    assert [e["business_id"] for e in duplicate_evidence(result, limit=2)] == ["id-0", "id-1"]


OUTCOMES = st.sampled_from([WriteOutcome.ACCEPTED, WriteOutcome.REJECTED, WriteOutcome.ERROR])


@settings(max_examples=150, deadline=None)
@given(
    plan=st.lists(
        st.tuples(st.lists(OUTCOMES, max_size=5), st.booleans(), st.booleans(), st.booleans()),
        min_size=1,
        max_size=8,
    ),
    send_failures=st.integers(min_value=0, max_value=2),
)
def test_counts_and_verdict_property(
    plan: list[tuple[list[WriteOutcome], bool, bool, bool]], send_failures: int
) -> None:
    """For each id: its write outcomes, whether it was acked, stored at the end, and conflicted."""
    history = History()
    items = []
    expected_duplicates = 0
    expected_lost = 0
    expected_conflicts = 0
    expected_unsettled = 0
    for n, (outcomes, acked, stored, conflict) in enumerate(plan):
        bid, mid = f"id-{n}", f"m-{n}"
        history.sent.append(sent(n, bid, mid))
        if acked:
            history.acks.append(Ack(message_id=mid, acked_ns=1))
        else:
            expected_unsettled += 1
        writes = []
        previous = None
        for i, outcome in enumerate(outcomes):
            item = order_item(bid, 2 if conflict and i > 0 else 1)
            writes.append(
                write(
                    item,
                    outcome=outcome,
                    before=previous,
                    before_known=True,
                    condition=None,
                    started_ns=i,
                )
            )
            if outcome is WriteOutcome.ACCEPTED:
                if previous is not None and previous != item:
                    expected_conflicts += 1
                previous = item
        history.invocations.append(invocation(f"r-{n}", [record(mid, bid)], writes))
        accepted = outcomes.count(WriteOutcome.ACCEPTED)
        expected_duplicates += max(0, accepted - 1)
        if stored and previous is not None:
            items.append(previous)
        if acked and (accepted == 0 or not stored):
            expected_lost += 1
    for k in range(send_failures):
        history.sent.append(sent(100 + k, f"unsent-{k}", None))

    result: Check = check(history, end_state(items))
    counts = result.counts
    assert counts.duplicate_writes == expected_duplicates
    assert counts.conflicting_writes == expected_conflicts
    assert counts.lost_outcomes == expected_lost
    assert counts.unsettled == expected_unsettled
    assert counts.send_failures == send_failures
    assert counts.writes_attempted == sum(len(o) for o, *_ in plan)
    assert (
        counts.writes_accepted + counts.writes_rejected + counts.writes_errored
        == counts.writes_attempted
    )
    all_zero = not (
        counts.duplicate_writes
        or counts.conflicting_writes
        or counts.lost_outcomes
        or counts.unsettled
        or counts.send_failures
    )
    assert (result.verdict is Verdict.PASS) == all_zero
    assert (result.reasons == ()) == all_zero
    evidence_ids = {e["business_id"] for e in duplicate_evidence(result, limit=1000)}
    assert evidence_ids == {
        f"id-{n}"
        for n, (outcomes, *_) in enumerate(plan)
        if outcomes.count(WriteOutcome.ACCEPTED) >= 2
    }
