"""A delivery that finishes a failed delivery's half-written outcome takes it over; any
other delivery's accepted write over the outcome is a duplicate."""

from __future__ import annotations

from loadtest.model.checker import check
from loadtest.model.checker.passes import Model
from loadtest.model.checker.verdict import Complete
from loadtest.model.history.log import (
    Ack,
    EndState,
    History,
    InvocationOutcome,
    OutcomeKey,
    TypedItem,
    WriteOutcome,
)
from tests.model.builders import end_state, invocation, order_item, record, sent, write


def claim(order_id: str, **more: TypedItem) -> TypedItem:
    return {"id": {"S": order_id}, "status": {"S": "PENDING"}, **more}


def done(order_id: str, quantity: int) -> TypedItem:
    return {**order_item(order_id, quantity), "status": {"S": "DONE"}}


def _history(
    first: InvocationOutcome,
    second_copy: str,
    *,
    claimed: TypedItem | None = None,
    clean_other: bool = True,
) -> tuple[History, EndState]:
    """``dedup-order``: the first delivery (m-1) claims, then ends as ``first``; the second
    (``second_copy``: m-1 again, received a second time, or the resend m-2) completes over
    the claim. With ``clean_other``, ``other-order`` is stored complete where nothing failed."""
    pending = claimed or claim("dedup-order")
    finished = done("dedup-order", 4)
    history = History(started_ns=0, ended_ns=50_000_000)
    history.sent = [sent(0, "dedup-order", "m-1", 4), sent(1, "dedup-order", "m-2", 4)]
    receive = 2 if second_copy == "m-1" else 1
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "dedup-order")],
            [write(pending, before_known=True, started_ns=1_000_000)],
            outcome=first,
            started_ns=1_000_000,
        ),
        invocation(
            "r-2",
            [record(second_copy, "dedup-order", receive)],
            [
                write(
                    finished,
                    operation="UpdateItem",
                    condition=None,
                    before=pending,
                    before_known=True,
                    started_ns=5_000_000,
                )
            ],
            started_ns=5_000_000,
        ),
    ]
    items = [finished]
    if clean_other:
        other = done("other-order", 1)
        history.sent.append(sent(2, "other-order", "m-3", 1))
        history.invocations.append(
            invocation(
                "r-3",
                [record("m-3", "other-order")],
                [write(other, before_known=True, started_ns=9_000_000)],
                started_ns=9_000_000,
            )
        )
        items.append(other)
    history.acks = [Ack(message_id=m.message_id or "", acked_ns=20_000_000) for m in history.sent]
    return history, end_state(items)


def test_the_redelivery_that_completes_a_crashed_claim_takes_it_over() -> None:
    history, end = _history(InvocationOutcome.CRASH, "m-1")
    result = check(history, end)
    assert result.counts.duplicate_writes == 0
    assert result.verdict.value == "pass", result.reasons


def test_a_resend_that_completes_a_live_deliverys_claim_is_a_duplicate_write() -> None:
    # The first delivery did not fail: its claim was in progress, so the resend's completion
    # is the order processed a second time, not a takeover.
    history, end = _history(InvocationOutcome.SUCCESS, "m-2")
    result = check(history, end)
    assert result.counts.duplicate_writes == 1
    assert result.verdict.value == "fail"
    # It finished an order no delivery had stored yet: it changed no stored outcome.
    assert result.counts.conflicting_writes == 0
    assert any(n.startswith("1 of the duplicate writes took over a claim") for n in result.notes)


def test_a_redelivery_that_claims_again_over_a_crashed_claim_takes_it_over() -> None:
    # An unconditional claim: the redelivery puts its own claim over the crashed one's,
    # then completes it.
    history, end = _history(InvocationOutcome.CRASH, "m-1")
    completion = history.invocations[1]
    reclaim = write(claim("dedup-order"), before=claim("dedup-order"), started_ns=4_000_000)
    object.__setattr__(completion, "writes", (reclaim, *completion.writes))
    result = check(history, end)
    assert result.counts.duplicate_writes == 0, result.reasons
    assert result.verdict.value == "pass", result.reasons


def test_a_redelivery_that_claims_with_a_token_of_its_own_then_completes_takes_it_over() -> None:
    # A claim with a token: the redelivery puts its own token over the crashed holder's
    # (fencing it out), then completes the order on its token.
    history, end = _history(InvocationOutcome.CRASH, "m-1")
    completion = history.invocations[1]
    token = claim("dedup-order", token={"S": "t-2"})
    reclaim = write(token, before=claim("dedup-order"), before_known=True, started_ns=4_000_000)
    [finish] = completion.writes
    object.__setattr__(finish, "item_before", token)
    object.__setattr__(completion, "writes", (reclaim, finish))
    result = check(history, end)
    assert result.counts.duplicate_writes == 0, result.reasons
    assert result.verdict.value == "pass", result.reasons
    assert not any("took over a claim" in n for n in result.notes), result.notes


def test_a_redelivery_that_claims_again_and_stops_leaves_the_order_lost_not_written_twice() -> None:
    history, _ = _history(InvocationOutcome.CRASH, "m-1")
    completion = history.invocations[1]
    token = claim("dedup-order", token={"S": "t-2"})
    reclaim = write(token, before=claim("dedup-order"), before_known=True, started_ns=4_000_000)
    object.__setattr__(completion, "writes", (reclaim,))
    result = check(history, end_state([token, done("other-order", 1)]))
    assert result.counts.duplicate_writes == 0, result.reasons
    # Both messages of the order were acknowledged; neither got it done.
    assert result.counts.lost_outcomes == 2


def test_a_completion_over_a_crashed_deliverys_finished_outcome_is_a_duplicate_write() -> None:
    # The crash came after the outcome was complete: nothing was left to take over.
    history, end = _history(InvocationOutcome.CRASH, "m-1", claimed=done("dedup-order", 4))
    assert check(history, end).counts.duplicate_writes == 1


def test_what_a_claim_lacks_is_learned_from_the_outcomes_where_nothing_failed() -> None:
    # The claim carries the message's quantity, so only what complete outcomes hold (status,
    # quantity and total_cents, learned from other-order) shows it unfinished.
    partial = claim("dedup-order", quantity={"N": "4"})
    learned = check(*_history(InvocationOutcome.CRASH, "m-1", claimed=partial))
    assert learned.counts.duplicate_writes == 0
    assert learned.complete is not None
    assert learned.complete.names == frozenset({"status", "quantity", "total_cents"})
    alone = check(*_history(InvocationOutcome.CRASH, "m-1", claimed=partial, clean_other=False))
    assert alone.complete is None
    assert alone.counts.duplicate_writes == 1


def test_an_acknowledged_claim_is_lost_by_what_earlier_runs_learned() -> None:
    # claim, crash, the redelivery skips the claim and is acknowledged: the order stays
    # PENDING. With no outcome of this run to learn from, the table alone cannot tell.
    pending = claim("dedup-order")
    history = History(started_ns=0, ended_ns=50_000_000)
    history.sent = [sent(0, "dedup-order", "m-1", 4)]
    history.invocations = [
        invocation(
            "r-1",
            [record("m-1", "dedup-order")],
            [write(pending, before_known=True, started_ns=1_000_000)],
            outcome=InvocationOutcome.CRASH,
            started_ns=1_000_000,
        ),
        invocation(
            "r-2",
            [record("m-1", "dedup-order", 2)],
            [
                write(
                    pending,
                    outcome=WriteOutcome.REJECTED,
                    before=pending,
                    before_known=True,
                    started_ns=5_000_000,
                )
            ],
            started_ns=5_000_000,
        ),
    ]
    history.acks = [Ack(message_id="m-1", acked_ns=20_000_000)]
    end = end_state([pending])
    assert check(history, end).verdict.value == "inconclusive"
    before = {Model.key(OutcomeKey()).description: Complete(frozenset({"status", "quantity"}))}
    judged = check(history, end, learned_before=before)
    assert judged.counts.lost_outcomes == 1
    assert judged.verdict.value == "fail"
