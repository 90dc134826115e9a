"""loadtest.model.checker: counts and verdicts on synthetic histories."""

from __future__ import annotations

import dataclasses
import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from loadtest.model.checker import (
    COUNT_NAMES,
    EFFECT_COUNT_NAMES,
    Check,
    Counts,
    LiveDuplicates,
    Role,
    Verdict,
    carries,
    check,
    details_of,
    duplicate_evidence,
    key_template,
)
from loadtest.model.checker.details import carries_id
from loadtest.model.dynamodb.updates import same_item
from loadtest.model.history.log import (
    Ack,
    DeadLetter,
    EffectKind,
    EndState,
    History,
    InvocationOutcome,
    ObserverFault,
    OutcomeKey,
    SinkContents,
    TypedItem,
    UnobservedCall,
    WriteOutcome,
    WriteRecord,
    key_string,
)
from tests.model.builders import (
    CONDITION,
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
    quantities: dict[str, int] | None = None,
) -> History:
    """sent_ids: (message_id, business_id) pairs, all acked unless ``acked`` says otherwise."""
    history = History()
    quantities = quantities or {}
    history.sent = [
        sent(i, bid, mid, quantities.get(mid, 1)) for i, (mid, bid) in enumerate(sent_ids)
    ]
    ack_ids = [mid for mid, _ in sent_ids] if acked is None else acked
    history.acks = [Ack(message_id=mid, acked_ns=100) for mid in ack_ids]
    return history


def roles(result: Check) -> list[tuple[str | None, str]]:
    return [(d.business_id, d.role.value) for d in result.decisions]


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
        writes_indeterminate=0,
        side_writes=0,
        noop_writes=0,
        duplicate_writes=0,
        conflicting_writes=0,
        lost_outcomes=0,
        unexpected_dead_letters=0,
        acked=4,
        dead_lettered=0,
        handler_errors=0,
        unsettled=0,
        send_failures=0,
        unobserved_calls=0,
        observer_errors=0,
    )
    assert result.verdict is Verdict.PASS
    assert result.reasons == result.inconclusive == ()
    assert [(d.business_id, d.message_id, d.role) for d in result.decisions] == [
        ("dedup-order", "m-1", Role.FIRST),
        ("dedup-order", "m-2", Role.REJECTED),
        ("dedup-order", "m-3", Role.REJECTED),
        ("other-order", "m-4", Role.FIRST),
    ]
    assert duplicate_evidence(result) == []
    assert result.outcome == "outcome items keyed id = '{id}'"


def test_a_run_cut_short_judges_what_happened_and_leaves_absences_unjudged() -> None:
    history, _ = lab_history()
    # The backend died: the end state could not be read, so the table looks empty, and
    # the last message was still being handled.
    history.acks = history.acks[:-1]
    unread = EndState(0, 0, 0, {})
    complete = check(history, unread)
    assert complete.verdict is Verdict.FAIL
    assert complete.counts.lost_outcomes == 3 and complete.counts.unsettled == 1

    cut = check(history, unread, cut_short=True)
    assert cut.counts == complete.counts
    assert cut.verdict is Verdict.INCONCLUSIVE
    assert cut.reasons == ()
    assert [line for line in cut.inconclusive if "cut short" in line] == [
        "3 lost outcome(s): acknowledged, but the message's details were never stored, "
        "but the run was cut short: not judged",
        "1 message(s) neither acknowledged nor dead-lettered, but the run was cut short: "
        "not judged",
    ]


def test_counts_as_dict_has_every_count_but_those_of_a_run_without_them() -> None:
    # The effects' counts need sinks or effects; the duplicate side writes need a write
    # of an item beside the outcomes tied to a delivery.
    history, end = lab_history()
    counts = check(history, end).counts.as_dict()
    optional = {*EFFECT_COUNT_NAMES, "duplicate_side_writes"}
    assert tuple(counts) == tuple(n for n in COUNT_NAMES if n not in optional)
    assert len(counts) == 24
    assert all(type(v) is int for v in counts.values())
    with_sinks = dataclasses.replace(
        end, sinks=(SinkContents("orders", EffectKind.TOPIC, "arn:orders"),)
    )
    assert tuple(check(history, with_sinks).counts.as_dict()) == COUNT_NAMES[:-1]


def racy_double_write(second_quantity: int) -> tuple[History, EndState]:
    """read-then-write: two deliveries both read "absent"; the second overwrites the first."""
    first = order_item("dedup-order", 4)
    second = order_item("dedup-order", second_quantity)
    history = history_of(
        [("m-1", "dedup-order"), ("m-2", "dedup-order")],
        quantities={"m-1": 4, "m-2": second_quantity},
    )
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
    assert roles(result) == [("dedup-order", "first"), ("dedup-order", "again")]


def test_a_run_cut_short_still_fails_on_a_duplicate_write() -> None:
    history, _ = racy_double_write(4)
    # Cut short with the end state unread: the writes that happened are evidence.
    result = check(history, EndState(0, 0, 0, {}), cut_short=True)
    assert result.verdict is Verdict.FAIL
    assert result.reasons == ("1 duplicate write(s): an outcome was written again",)


def test_overwrite_with_different_details_is_conflicting() -> None:
    result = check(*racy_double_write(5))
    assert result.counts.duplicate_writes == 1
    assert result.counts.conflicting_writes == 1
    # m-1's details (quantity 4) were stored once, then replaced: not lost, but conflicting.
    assert result.counts.lost_outcomes == 0
    assert result.verdict is Verdict.FAIL
    assert result.reasons == (
        "1 duplicate write(s): an outcome was written again",
        "1 conflicting write(s): another delivery changed an outcome already stored",
    )


def test_first_write_follows_the_backend_order_not_client_clocks() -> None:
    """The write that found the item absent is the first, even when its clock reads later."""
    item = order_item("a", 1)
    history = history_of([("m-1", "a"), ("m-2", "a")])
    history.invocations = [
        # r-1's clock is earlier, but its old image shows r-2's item already there.
        invocation(
            "r-1",
            [record("m-1", "a")],
            [write(item, condition=None, before=item, before_known=True, started_ns=5)],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [write(item, condition=None, before=None, before_known=True, started_ns=900)],
        ),
    ]
    result = check(history, end_state([item]))
    by_request = {d.invocation.request_id: d for d in result.decisions}
    assert by_request["r-2"].role is Role.FIRST
    assert by_request["r-2"].order == 1
    assert by_request["r-1"].role is Role.AGAIN
    assert by_request["r-1"].order == 2
    evidence = duplicate_evidence(result)
    assert [w["request_id"] for w in evidence[0]["writes"]] == ["r-2", "r-1"]
    assert evidence[0]["writes"][0]["item_before"] is None


def test_side_writes_are_counted_apart_never_as_duplicates() -> None:
    """A correct consumer that also writes an audit row and a lock per delivery."""
    item = order_item("a", 1)
    history = history_of([("m-1", "a"), ("m-2", "a")])

    def audit(n: int) -> TypedItem:
        return {
            "id": {"S": f"audit#9f1c2b7e-0000-4000-8000-00000000000{n}"},
            "order_id": {"S": "a"},
            "event": {"S": "processed"},
        }

    lock = {"id": {"S": "lock#a"}, "expires": {"N": "1700000000"}}
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a")],
            [
                write(lock, condition="attribute_not_exists(id)", before=None, before_known=True),
                write(item, before=None, before_known=True, started_ns=1),
                write(audit(1), condition=None, started_ns=2),
            ],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [
                write(item, outcome=WriteOutcome.REJECTED, before=item, before_known=True),
                write(audit(2), condition=None, started_ns=3),
            ],
        ),
    ]
    result = check(history, end_state([item, audit(1), audit(2)]))
    assert result.counts.side_writes == 3
    assert result.counts.writes_attempted == 2
    assert result.counts.duplicate_writes == 0
    assert result.verdict is Verdict.PASS
    assert {t: v["role"] for t, v in result.templates.items()} == {
        "id = '{id}'": "outcome",
        "id=lock#{id}": "side",
        "id=audit#{uuid}": "side",
    }


def test_outcomes_under_a_per_delivery_key_are_copies_and_duplicates() -> None:
    """The lab's warning: keyed by messageId, every resend stores the order again."""

    def by_message(message_id: str, order_id: str, quantity: int = 1) -> TypedItem:
        return {
            "id": {"S": message_id},
            "order_id": {"S": order_id},
            "quantity": {"N": str(quantity)},
        }

    history = history_of([("m-1", "a"), ("m-2", "a"), ("m-3", "b")])
    items = [by_message("m-1", "a"), by_message("m-2", "a"), by_message("m-3", "b")]
    history.invocations = [
        invocation(f"r-{n}", [record(f"m-{n}", bid)], [write(item, condition=None)])
        for n, bid, item in ((1, "a", items[0]), (2, "a", items[1]), (3, "b", items[2]))
    ]
    result = check(history, EndState(0, 0, 0, {f"m-{n}": items[n - 1] for n in (1, 2, 3)}))
    assert result.counts.duplicate_writes == 1
    assert result.counts.conflicting_writes == 0
    assert result.counts.lost_outcomes == 0
    assert result.verdict is Verdict.FAIL
    assert "a key that changes per delivery (id={messageId})" in result.outcome


def test_a_declared_outcome_key_template() -> None:
    key = OutcomeKey((("pk", "ORDER#{id}"),))

    def order(order_id: str) -> TypedItem:
        return {"pk": {"S": f"ORDER#{order_id}"}, "quantity": {"N": "1"}}

    history = history_of([("m-1", "a"), ("m-2", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a")],
            [write(order("a"), before=None, before_known=True, write_key={"pk": order("a")["pk"]})],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [
                write(
                    order("a"),
                    outcome=WriteOutcome.REJECTED,
                    before=order("a"),
                    before_known=True,
                    write_key={"pk": order("a")["pk"]},
                )
            ],
        ),
    ]
    result = check(history, EndState(0, 0, 0, {"ORDER#a": order("a")}), key)
    assert result.verdict is Verdict.PASS
    assert result.counts.writes_accepted == 1
    assert result.counts.writes_rejected == 1


def test_no_outcome_key_and_no_carrier_is_inconclusive_naming_the_templates() -> None:
    # Orders stored as "ORDER#<id>" under the default key "id" without the details.
    history = history_of([("m-1", "a")])
    item = {"id": {"S": "ORDER#a"}, "status": {"S": "done"}}
    history.invocations = [invocation("r-1", [record("m-1", "a")], [write(item)])]
    result = check(history, EndState(0, 0, 0, {"ORDER#a": item}))
    assert result.verdict is Verdict.INCONCLUSIVE
    (reason,) = result.inconclusive
    assert "no write matches the outcome key id = '{id}'" in reason
    assert "key templates seen: id=ORDER#{id}" in reason
    assert result.counts.lost_outcomes == 0


def test_a_declared_outcome_key_is_taken_at_its_word_when_nothing_else_carries_an_outcome() -> None:
    # The scenario said outcomes live at id = "{id}" (the default, declared): a consumer
    # that only wrote its markers and acked stored no outcome. Lost, not "declare a key".
    history = history_of([("m-1", "a")])
    marker = {"id": {"S": "processed#a"}}
    history.invocations = [invocation("r-1", [record("m-1", "a")], [write(marker)])]
    end = EndState(0, 0, 0, {"processed#a": marker})
    result = check(history, end, OutcomeKey(declared=True))
    assert result.verdict is Verdict.FAIL
    assert not result.inconclusive
    assert (result.counts.lost_outcomes, result.counts.side_writes) == (1, 1)
    assert any("nothing was stored" in reason for reason in result.reasons)
    # Not declared, the same run may keep its outcomes under the marker's key: asked.
    assert check(history, end).verdict is Verdict.INCONCLUSIVE


def test_an_acked_resend_with_other_details_never_stored_is_lost() -> None:
    """Resends with different details, acknowledged without being stored: a lost outcome."""
    first = order_item("a", 2)
    history = history_of([("m-1", "a"), ("m-2", "a")], quantities={"m-1": 2, "m-2": 3})
    history.invocations = [
        invocation("r-1", [record("m-1", "a")], [write(first, before=None, before_known=True)]),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [
                write(
                    order_item("a", 3),
                    outcome=WriteOutcome.REJECTED,
                    before=first,
                    before_known=True,
                )
            ],
        ),
    ]
    result = check(history, end_state([first]))
    assert result.counts.lost_outcomes == 1
    assert result.verdict is Verdict.FAIL
    rejected = next(d for d in result.decisions if d.role is Role.REJECTED)
    assert rejected.write.requested == order_item("a", 3)
    assert rejected.write.item_before == first


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


def test_accepted_write_whose_item_is_gone_is_lost() -> None:
    history = history_of([("m-1", "a")])
    history.invocations = [invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))])]
    result = check(history, end_state([]))
    assert result.counts.writes_accepted == 1
    assert result.counts.lost_outcomes == 1
    assert result.verdict is Verdict.FAIL


def test_a_delete_of_the_outcome_is_no_duplicate_and_leaves_it_lost() -> None:
    item = order_item("a", 1)
    history = history_of([("m-1", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a")],
            [
                write(item, before=None, before_known=True),
                write(item, operation="DeleteItem", condition=None, before=item, before_known=True),
            ],
        ),
    ]
    result = check(history, end_state([]))
    assert roles(result) == [("a", "first"), ("a", "delete")]
    assert result.counts.duplicate_writes == 0
    assert result.counts.lost_outcomes == 1


def _replaced_by_delete_then_put(resent: TypedItem) -> Check:
    """a/2 stored by m-1; m-2 (a resend of a) deletes it and puts ``resent``."""
    first = order_item("a", 2)
    history = history_of(
        [("m-1", "a"), ("m-2", "a")], quantities={"m-2": int(resent["quantity"]["N"])}
    )
    history.invocations = [
        invocation("r-1", [record("m-1", "a")], [write(first, before=None, before_known=True)]),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [
                write(
                    first,
                    operation="DeleteItem",
                    condition=None,
                    before=first,
                    before_known=True,
                    started_ns=10,
                ),
                write(resent, before=None, before_known=True, started_ns=20),
            ],
            started_ns=10,
        ),
    ]
    return check(history, end_state([resent]))


def test_a_delete_then_a_put_of_other_details_by_another_delivery_is_a_conflicting_write() -> None:
    # The resend replaced the stored order: it changed the outcome as an overwrite would,
    # though its put found the item absent (its own delete went first).
    result = _replaced_by_delete_then_put(order_item("a", 3))
    assert roles(result) == [("a", "first"), ("a", "delete"), ("a", "again")]
    assert (result.counts.duplicate_writes, result.counts.conflicting_writes) == (1, 1)
    # The same details put back: written again, nothing changed.
    same = _replaced_by_delete_then_put(order_item("a", 2))
    assert (same.counts.duplicate_writes, same.counts.conflicting_writes) == (1, 0)


def test_if_not_exists_repeats_are_noop_writes_and_pass() -> None:
    item = order_item("a", 1)
    history = history_of([("m-1", "a"), ("m-2", "a"), ("m-3", "a")])
    history.invocations = [
        invocation(
            f"r-{n}",
            [record(f"m-{n}", "a")],
            [
                write(
                    item,
                    operation="UpdateItem",
                    condition=None,
                    before=None if n == 1 else item,
                    before_known=True,
                    noop_when_present=True,
                    started_ns=n,
                )
            ],
        )
        for n in (1, 2, 3)
    ]
    result = check(history, end_state([item]))
    assert result.counts.noop_writes == 2
    assert result.counts.duplicate_writes == 0
    assert result.verdict is Verdict.PASS
    assert roles(result) == [("a", "first"), ("a", "noop"), ("a", "noop")]


def test_an_increment_applied_twice_is_duplicate_and_conflicting() -> None:
    once = {"id": {"S": "a"}, "total_cents": {"N": "350"}}
    twice = {"id": {"S": "a"}, "total_cents": {"N": "700"}}
    history = history_of([("m-1", "a"), ("m-2", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a")],
            [write(once, operation="UpdateItem", condition=None, before=None, before_known=True)],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [write(twice, operation="UpdateItem", condition=None, before=once, before_known=True)],
        ),
    ]
    result = check(history, end_state([twice]))
    assert result.counts.duplicate_writes == 1
    assert result.counts.conflicting_writes == 1


def test_steps_of_one_delivery_are_one_write_of_the_outcome() -> None:
    """A claim, then the result, by the same invocation: one write, not a duplicate."""
    claim = {"id": {"S": "a"}, "status": {"S": "IN_PROGRESS"}}
    done = {**order_item("a", 1), "status": {"S": "DONE"}}
    history = history_of([("m-1", "a"), ("m-2", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a")],
            [
                write(claim, before=None, before_known=True, started_ns=1),
                write(
                    done,
                    operation="UpdateItem",
                    condition=None,
                    before=claim,
                    before_known=True,
                    started_ns=2,
                ),
            ],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [
                write(
                    claim,
                    outcome=WriteOutcome.REJECTED,
                    before=done,
                    before_known=True,
                    started_ns=3,
                )
            ],
        ),
    ]
    result = check(history, end_state([done]))
    assert roles(result) == [("a", "first"), ("a", "step"), ("a", "rejected")]
    assert result.counts.duplicate_writes == 0
    assert result.verdict is Verdict.PASS


def test_copies_of_one_id_in_one_batch_overwriting_are_duplicates() -> None:
    item = order_item("a", 1)
    history = history_of([("m-1", "a"), ("m-2", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a"), record("m-2", "a")],
            [
                write(item, condition=None, before=None, before_known=True, started_ns=1),
                write(item, condition=None, before=item, before_known=True, started_ns=2),
            ],
        )
    ]
    result = check(history, end_state([item]))
    assert result.counts.duplicate_writes == 1


def test_nothing_stored_and_everything_dead_lettered_never_passes() -> None:
    history = history_of([("m-1", "a"), ("m-2", "b")], acked=[])
    history.invocations = [
        invocation(
            f"r-{n}",
            [record(f"m-{n}", bid)],
            [],
            outcome=InvocationOutcome.ERROR,
            error="KeyError: 'ORDERS_TABLE'",
        )
        for n, bid in ((1, "a"), (2, "b"))
    ]
    history.dead_letters = [DeadLetter("m-1", 3, 5), DeadLetter("m-2", 3, 6)]
    result = check(history, end_state([]))
    assert result.counts.unexpected_dead_letters == 2
    assert result.verdict is Verdict.FAIL
    assert any(r.startswith("nothing was stored") for r in result.reasons)


def test_planted_poison_and_conflicting_resends_are_expected_dead_letters() -> None:
    item = order_item("a", 2)
    history = history_of(
        [("m-1", "a"), ("m-2", "a"), ("m-3", "p")], acked=["m-1"], quantities={"m-1": 2, "m-2": 3}
    )
    planted = list(history.sent)
    planted[2] = sent(2, "p", "m-3", 0, poison=True)
    history.sent = planted
    history.invocations = [
        invocation("r-1", [record("m-1", "a")], [write(item, before=None, before_known=True)]),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [
                write(
                    order_item("a", 3),
                    outcome=WriteOutcome.REJECTED,
                    before=item,
                    before_known=True,
                )
            ],
            outcome=InvocationOutcome.ERROR,
        ),
    ]
    history.dead_letters = [DeadLetter("m-2", 3, 5), DeadLetter("m-3", 3, 6)]
    result = check(history, end_state([item]))
    assert result.counts.dead_lettered == 2
    assert result.counts.unexpected_dead_letters == 0
    assert result.verdict is Verdict.PASS


def test_unobserved_calls_and_observer_errors_make_a_run_inconclusive() -> None:
    history, end = lab_history()
    first, *rest = history.invocations
    history.invocations = [
        dataclasses.replace(
            first,
            unobserved=(UnobservedCall("ExecuteStatement", "a SELECT with OR"),) * 12,
            observer_faults=(ObserverFault("PutItem", "TypeError: boom"),),
        ),
        *rest,
    ]
    result = check(history, end)
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.counts.unobserved_calls == 12
    assert result.counts.observer_errors == 1
    assert result.inconclusive[0] == "12 ExecuteStatement call(s) not understood: a SELECT with OR"
    assert "1 loadtest observer error(s)" in result.inconclusive[1]


def test_items_no_observed_write_stored_make_a_run_inconclusive() -> None:
    # A consumer whose client the observer does not hook: its writes are in the
    # table, not in the history. Nothing seen is a duplicate, yet it may have written
    # every order three times: never a pass.
    history = history_of([("m-1", "a"), ("m-2", "a"), ("m-3", "b")])
    history.invocations = [
        invocation(f"r-{n}", [record(f"m-{n}", business_id)], [])
        for n, business_id in ((1, "a"), (2, "a"), (3, "b"))
    ]
    result = check(history, end_state([order_item("a", 1), order_item("b", 1)]))
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.counts.duplicate_writes == result.counts.lost_outcomes == 0
    assert result.inconclusive == (
        "2 outcome item(s) in the table were stored by no write the observer saw in an "
        "invocation (e.g. 'a'): written after the handler returned, or by a client the "
        "observer does not hook, so writes may be missing from the counts",
    )
    # One observed write of "a": only "b" is unexplained. A rejected write explains nothing.
    history.invocations = [
        invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))]),
        invocation("r-2", [record("m-2", "a")], []),
        invocation(
            "r-3",
            [record("m-3", "b")],
            [write(order_item("b", 1), outcome=WriteOutcome.REJECTED, before=order_item("b", 1))],
        ),
    ]
    result = check(history, end_state([order_item("a", 1), order_item("b", 1)]))
    assert result.verdict is Verdict.INCONCLUSIVE
    assert result.inconclusive[0].startswith("1 outcome item(s) in the table were stored by no")
    assert "'b'" in result.inconclusive[0]
    # An item that is no outcome (a handler's cold start wrote it, outside any
    # invocation) needs no write in the history.
    history.invocations = [
        invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))]),
        invocation("r-2", [record("m-2", "a")], []),
        invocation("r-3", [record("m-3", "b")], [write(order_item("b", 1))]),
    ]
    schema = {"id": {"S": "meta#schema"}, "version": {"N": "2"}}
    result = check(history, end_state([order_item("a", 1), order_item("b", 1), schema]))
    assert result.verdict is Verdict.PASS, result.inconclusive


def test_a_failure_outranks_missing_evidence() -> None:
    history, end = racy_double_write(4)
    first, *rest = history.invocations
    history.invocations = [
        dataclasses.replace(first, unobserved=(UnobservedCall("UpdateItem", "legacy"),)),
        *rest,
    ]
    result = check(history, end)
    assert result.verdict is Verdict.FAIL
    assert result.inconclusive


def test_unsettled_message_fails_the_run() -> None:
    history = history_of([("m-1", "a"), ("m-2", "b")], acked=["m-1"])
    history.invocations = [invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))])]
    result = check(history, end_state([order_item("a", 1)]))
    assert result.counts.unsettled == 1
    assert result.verdict is Verdict.FAIL
    assert result.reasons == ("1 message(s) neither acknowledged nor dead-lettered",)


def test_unsettled_after_the_deadline_says_so() -> None:
    history = history_of([("m-1", "a")], acked=[])
    history.timed_out = True
    result = check(history, end_state([]))
    assert "1 message(s) neither acknowledged nor dead-lettered (the run's deadline passed)" in (
        result.reasons
    )


def test_send_failures_fail_the_run() -> None:
    history = history_of([("m-1", "a")])
    history.sent.append(sent(1, "b", None))
    history.invocations = [invocation("r-1", [record("m-1", "a")], [write(order_item("a", 1))])]
    result = check(history, end_state([order_item("a", 1)]))
    assert result.counts.messages_sent == 1
    assert result.counts.send_failures == 1
    assert result.reasons == ("1 message(s) could not be sent",)


def test_redeliveries_count_receive_counts_above_one() -> None:
    history = history_of([("m-1", "a"), ("m-2", "b")])
    item_a, item_b = order_item("a", 1), order_item("b", 1)
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


def test_values_compare_as_dynamodb_does() -> None:
    assert same_item({"n": {"N": "4"}}, {"n": {"N": "4.0"}})
    assert same_item({"s": {"SS": ["a", "b"]}}, {"s": {"SS": ["b", "a"]}})
    assert not same_item({"n": {"N": "4"}}, None)
    details = details_of(json.dumps({"id": "a", "quantity": 4}))
    assert details is not None
    assert carries({"id": {"S": "a"}, "quantity": {"N": "4"}}, details)
    assert carries({"id": {"S": "a"}, "qty": {"S": "4"}}, details)
    assert not carries({"id": {"S": "a"}, "quantity": {"N": "5"}}, details)


# --- properties over generated histories --------------------------------------------

DELIVERY = st.tuples(
    st.integers(min_value=1, max_value=3),  # quantity this copy carries
    st.sampled_from(["conditional", "unconditional", "ack-only"]),
    st.booleans(),  # acknowledged
)


@settings(max_examples=200, deadline=None)
@given(plan=st.lists(st.lists(DELIVERY, min_size=1, max_size=4), min_size=1, max_size=6))
def test_every_acknowledged_message_is_stored_or_counted_lost(
    plan: list[list[tuple[int, str, bool]]],
) -> None:
    """Invariants on generated runs (one id per group of deliveries, served in order):

    - every acknowledged message's details are stored in some version of its
      outcome, or it is counted lost;
    - duplicate writes are the accepted writes of an outcome beyond the first;
    - the verdict passes exactly when no failing count is above zero.
    """
    history = History()
    final: list[TypedItem] = []
    expected_lost = expected_dup = expected_conflict = 0
    n = 0
    for group, deliveries in enumerate(plan):
        bid = f"id-{group}"
        stored: TypedItem | None = None
        versions: list[int] = []
        acked_quantities: list[int] = []
        accepted = 0
        for quantity, kind, acked in deliveries:
            n += 1
            mid = f"m-{n}"
            history.sent.append(sent(n, bid, mid, quantity))
            item = order_item(bid, quantity)
            writes = []
            if kind == "unconditional" or (kind == "conditional" and stored is None):
                writes.append(
                    write(item, condition=None, before=stored, before_known=True, started_ns=n)
                )
                if stored is not None and not same_item(stored, item):
                    expected_conflict += 1
                stored = item
                versions.append(quantity)
                accepted += 1
            elif kind == "conditional":
                writes.append(
                    write(
                        item,
                        outcome=WriteOutcome.REJECTED,
                        before=stored,
                        before_known=True,
                        started_ns=n,
                    )
                )
            history.invocations.append(
                invocation(f"r-{n}", [record(mid, bid)], writes, started_ns=n)
            )
            if acked:
                history.acks.append(Ack(mid, n))
                acked_quantities.append(quantity)
            else:
                history.dead_letters.append(DeadLetter(mid, 3, n))
        # Judged over the whole run: stored by any delivery, at any time, counts.
        expected_lost += sum(1 for q in acked_quantities if stored is None or q not in versions)
        expected_dup += max(0, accepted - 1)
        if stored is not None:
            final.append(stored)
    result = check(history, end_state(final))
    counts = result.counts
    assert counts.duplicate_writes == expected_dup
    assert counts.conflicting_writes == expected_conflict
    assert counts.lost_outcomes == expected_lost
    failing = (
        counts.duplicate_writes
        or counts.conflicting_writes
        or counts.lost_outcomes
        or counts.unexpected_dead_letters
        or counts.unsettled
    )
    assert (result.verdict is Verdict.PASS) == (not failing and not result.reasons)
    assert result.verdict is not Verdict.INCONCLUSIVE
    first = [d for d in result.decisions if d.role is Role.FIRST]
    assert all(d.write.item_before is None for d in first)


def test_copies_in_one_batch_applied_by_updates_are_each_a_delivery() -> None:
    """Three copies in one invocation, each applying ``ADD total_cents``: not steps."""

    def total(n: int) -> TypedItem:
        return {"id": {"S": "a"}, "quantity": {"N": "1"}, "total_cents": {"N": str(350 * n)}}

    history = history_of([("m-1", "a"), ("m-2", "a"), ("m-3", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a"), record("m-2", "a"), record("m-3", "a")],
            [
                write(
                    total(n),
                    operation="UpdateItem",
                    condition=None,
                    before=None if n == 1 else total(n - 1),
                    before_known=True,
                    started_ns=n,
                )
                for n in (1, 2, 3)
            ],
        )
    ]
    result = check(history, end_state([total(3)]))
    assert roles(result) == [("a", "first"), ("a", "again"), ("a", "again")]
    assert result.counts.duplicate_writes == 2
    assert result.counts.conflicting_writes == 2
    assert [d.message_id for d in result.decisions] == ["m-1", "m-2", "m-3"]


def _claim_then_result_in_a_batch(*, marked: bool) -> Check:
    """Two copies of one order in one batch: the first claims it, then stores the result;
    the second's claim is refused. ``marked``: each write says which record it was for."""
    claim = {"id": {"S": "a"}, "status": {"S": "PENDING"}}
    done = {**order_item("a", 1), "status": {"S": "DONE"}}
    history = history_of([("m-1", "a"), ("m-2", "a")])
    writes = [
        write(claim, before=None, before_known=True, started_ns=1),
        write(
            done,
            operation="UpdateItem",
            condition=None,
            before=claim,
            before_known=True,
            started_ns=2,
        ),
        write(claim, outcome=WriteOutcome.REJECTED, before=done, before_known=True, started_ns=3),
    ]
    if marked:
        writes = [
            dataclasses.replace(w, record_id=mark)
            for w, mark in zip(writes, ("m-1", "m-1", "m-2"), strict=True)
        ]
    history.invocations = [
        invocation("r-1", [record("m-1", "a"), record("m-2", "a")], writes),
    ]
    return check(history, end_state([done]))


def test_a_claim_then_its_result_in_a_batch_with_copies_is_one_delivery() -> None:
    result = _claim_then_result_in_a_batch(marked=True)
    assert roles(result) == [("a", "first"), ("a", "step"), ("a", "rejected")]
    assert result.verdict is Verdict.PASS


def test_writes_in_a_batch_with_copies_that_no_mark_ties_to_a_record_are_inconclusive() -> None:
    # The result could as well be the second copy's write over the first's claim.
    result = _claim_then_result_in_a_batch(marked=False)
    assert roles(result) == [("a", "first"), ("a", "step"), ("a", "rejected")]
    assert result.counts.duplicate_writes == 0
    assert result.verdict is Verdict.INCONCLUSIVE
    assert any("batch_size = 1" in reason for reason in result.inconclusive)


def test_body_fields_the_consumer_never_stores_are_not_details() -> None:
    """A trace id in the body, never stored: the order is still judged by its quantity."""
    item = order_item("a", 2)
    history = history_of([("m-1", "a"), ("m-2", "a")])
    history.sent = [
        dataclasses.replace(m, body=json.dumps({"id": "a", "quantity": q, "trace": f"t-{n}"}))
        for n, (m, q) in enumerate(zip(history.sent, (2, 3), strict=True))
    ]
    history.invocations = [
        invocation("r-1", [record("m-1", "a")], [write(item, before=None, before_known=True)]),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [
                write(
                    order_item("a", 3),
                    outcome=WriteOutcome.REJECTED,
                    before=item,
                    before_known=True,
                )
            ],
        ),
    ]
    result = check(history, end_state([item]))
    # m-2's quantity 3 was acked and never stored: lost, whatever its trace id.
    assert result.counts.lost_outcomes == 1
    assert result.notes == ()


_ID_TEXT = st.text(alphabet="ab1#-_ ", max_size=8)


@given(_ID_TEXT, st.lists(_ID_TEXT, max_size=3), _ID_TEXT)
def test_ids_in_keys_are_named_as_whole_tokens_only(
    value: str, business_ids: list[str], other: str
) -> None:
    """A key's business id is named ``{id}`` exactly where the token rule matches it (the
    rule as a plain regular expression per id), and an item carries an id the same way."""
    records = [record(f"m-{i}", b or None) for i, b in enumerate(business_ids)]
    inv = invocation("req-x", records, [])
    expected = value
    for business_id in sorted({b for b in business_ids if b}, key=len, reverse=True):
        expected = re.sub(
            rf"(?<![A-Za-z0-9]){re.escape(business_id)}(?![A-Za-z0-9])", "{id}", expected
        )
    template = key_template({"id": {"S": value}}, inv)
    assert template.startswith("id=")
    if not any(tag in template for tag in ("{uuid}", "{hex}", "{n}", "{messageId}")):
        assert template == f"id={expected}"
    for business_id in business_ids:
        token = re.compile(rf"(?<![A-Za-z0-9]){re.escape(business_id)}(?![A-Za-z0-9])")
        carried = value == business_id or token.search(value) is not None
        carried = carried or other == business_id or token.search(other) is not None
        assert carries_id({"other": {"S": other}}, {"id": {"S": value}}, business_id) is carried


def _token_replay(second_started_ns: int, *, same_request: bool = True) -> Check:
    """Two deliveries of one order, each a TransactWriteItems Put with the order's
    ClientRequestToken and no condition: the second repeats the first's call."""
    item = order_item("dedup-order", 4)
    history = history_of(
        [("m-1", "dedup-order"), ("m-2", "dedup-order")], quantities={"m-1": 4, "m-2": 4}
    )

    def put(started_ns: int, request: str) -> WriteRecord:
        return dataclasses.replace(
            write(item, condition=None, operation="TransactWriteItems.Put", started_ns=started_ns),
            idempotency=f"token-dedup-order:{request}",
        )

    history.invocations = [
        invocation("r-1", [record("m-1", "dedup-order")], [put(10, "digest-a")]),
        invocation(
            "r-2",
            [record("m-2", "dedup-order")],
            [put(second_started_ns, "digest-a" if same_request else "digest-b")],
        ),
    ]
    return check(history, end_state([item]))


def test_a_repeat_of_a_transaction_by_its_client_request_token_is_a_noop_write() -> None:
    # DynamoDB writes nothing for it within 10 minutes, whether it overlapped the first
    # call (then refused) or came after it (then answered as the first was).
    for second_started_ns in (20, 60 * 1_000_000_000):
        result = _token_replay(second_started_ns)
        assert result.counts.writes_accepted == 2
        assert (result.counts.duplicate_writes, result.counts.noop_writes) == (0, 1)
        assert result.verdict is Verdict.PASS, result.reasons
        assert roles(result) == [("dedup-order", "first"), ("dedup-order", "noop")]


def test_a_token_repeated_after_its_window_or_with_another_request_is_a_write_again() -> None:
    late = _token_replay(601 * 1_000_000_000)
    other = _token_replay(20, same_request=False)
    for result in (late, other):
        assert (result.counts.duplicate_writes, result.counts.noop_writes) == (1, 0)
        assert result.verdict is Verdict.FAIL


def test_live_duplicates_leave_out_a_transaction_repeated_by_its_token() -> None:
    live = LiveDuplicates()
    item = order_item("dedup-order", 4)
    for request_id, started_ns in (("r-1", 10), ("r-2", 20), ("r-3", 700 * 1_000_000_000)):
        put = dataclasses.replace(
            write(item, condition=None, operation="TransactWriteItems.Put", started_ns=started_ns),
            idempotency="token:digest",
            request_id=request_id,
        )
        live.add([put])
    assert live.duplicate_writes == 1  # only the one after the window


def test_the_parts_of_one_transaction_share_its_token_and_are_no_repeats() -> None:
    # One call with a token writes two orders; another delivery, without a token, then
    # writes the second order again: that is a duplicate the live count must see.
    live = LiveDuplicates()
    first, second = order_item("o-1", 1), order_item("o-2", 2)
    parts = [
        dataclasses.replace(
            write(item, condition=None, operation="TransactWriteItems.Put", started_ns=10),
            idempotency="token:digest",
            request_id="r-1",
        )
        for item in (first, second)
    ]
    live.add(parts)
    live.add([dataclasses.replace(write(second, condition=None, started_ns=50), request_id="r-2")])
    assert live.duplicate_writes == 1


def _duplicates_by_invocation_sets(invocations: list[list[WriteRecord]]) -> int:
    """The live count's rule with a set of invocations per item (what it kept before)."""
    units: dict[str, set[str]] = {}
    duplicates = 0
    for writes in invocations:
        for w in writes:
            if w.outcome is not WriteOutcome.ACCEPTED or w.deletes:
                continue
            stored = units.setdefault(key_string(w.key), set())
            if w.noop_when_present and stored:
                continue
            if w.request_id not in stored:
                stored.add(w.request_id)
                duplicates += len(stored) > 1
    return duplicates


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.sampled_from(["o-1", "o-2", "o-3"]),
                st.sampled_from(list(WriteOutcome)),
                st.booleans(),  # no-op by construction
                st.sampled_from(["PutItem", "UpdateItem", "DeleteItem"]),
            ),
            max_size=4,
        ),
        max_size=12,
    )
)
def test_live_duplicates_keep_one_mark_per_item_and_count_as_a_set_per_item_did(
    invocations: list[list[tuple[str, WriteOutcome, bool, str]]],
) -> None:
    built = [
        [
            dataclasses.replace(
                write(order_item(order, 1), outcome=outcome, operation=operation),
                noop_when_present=noop,
                request_id=f"r-{n}",
            )
            for order, outcome, noop, operation in writes
        ]
        for n, writes in enumerate(invocations)
    ]
    live = LiveDuplicates()
    for writes in built:
        live.add(writes)
    assert live.duplicate_writes == _duplicates_by_invocation_sets(built)


def test_a_rejected_write_of_the_declared_key_is_a_side_write_when_outcomes_are_copies() -> None:
    """Outcomes stored under the messageId, and a guarded marker keyed by the business id
    that the resend finds taken: the copies model reads that rejected write's item too."""

    def by_message(message_id: str, order_id: str) -> TypedItem:
        return {"id": {"S": message_id}, "order_id": {"S": order_id}, "quantity": {"N": "1"}}

    marker = {"id": {"S": "a"}}
    history = history_of([("m-1", "a"), ("m-2", "a")])
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "a")],
            [
                write(marker, before=None, before_known=True, condition=CONDITION),
                write(by_message("m-1", "a"), condition=None, started_ns=1),
            ],
        ),
        invocation(
            "r-2",
            [record("m-2", "a")],
            [
                write(
                    marker,
                    outcome=WriteOutcome.REJECTED,
                    before=marker,
                    before_known=True,
                    started_ns=2,
                ),
                write(by_message("m-2", "a"), condition=None, started_ns=3),
            ],
        ),
    ]
    table = {"a": marker, "m-1": by_message("m-1", "a"), "m-2": by_message("m-2", "a")}
    result = check(history, EndState(0, 0, 0, table))
    assert "a key that changes per delivery (id={messageId})" in result.outcome
    assert result.counts.side_writes == 2
    assert result.counts.writes_rejected == 0
    assert result.counts.duplicate_writes == 1
    assert [(d.business_id, d.role.value) for d in result.decisions] == [
        ("a", "side"),
        ("a", "first"),
        ("a", "side"),
        ("a", "again"),
    ]
    assert result.templates == {
        "id = '{id}'": {"role": "side", "writes": 2},
        "id={messageId}": {"role": "outcome", "writes": 2},
    }
