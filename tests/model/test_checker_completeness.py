"""What a complete outcome holds, learned from the outcomes where nothing failed: the names
it stores values under (inside maps too), its message's details, and the values it ends
with that it held otherwise on the way. A claim a crash left half-way, acknowledged by a
redelivery that skipped it, is then a lost outcome however the claim was written."""

from __future__ import annotations

from loadtest.model.checker import check
from loadtest.model.checker.verdict import Check
from loadtest.model.history.log import (
    Ack,
    EndState,
    History,
    InvocationOutcome,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)
from tests.model.builders import end_state, invocation, record, sent, write


def _s(text: str) -> TypedItem:
    return {"S": text}


def _n(number: int) -> TypedItem:
    return {"N": str(number)}


def _judged(
    steps: list[TypedItem], partial: TypedItem, *, redelivered_end: TypedItem | None = None
) -> Check:
    """As ``loadtest explore`` judges schedules: a first run, where nothing failed, writes
    ``other-order`` through ``steps`` (every item its delivery wrote, in order) and passes;
    the next run is judged by what it learned. There ``dedup-order``'s first delivery
    writes ``partial`` and crashes, and its redelivery finds it, skips it and is
    acknowledged (``redelivered_end``: writes that over it instead)."""
    clean = History(started_ns=0, ended_ns=90_000_000)
    clean.sent = [sent(0, "other-order", "m-1", 1)]
    writes = []
    before: TypedItem | None = None
    for at, item in enumerate(steps):
        writes.append(write(item, before=before, before_known=True, started_ns=1_000_000 + at))
        before = item
    clean.invocations = [invocation("r-1", [record("m-1", "other-order")], writes)]
    clean.acks = [Ack(message_id="m-1", acked_ns=80_000_000)]
    passed = check(clean, end_state([steps[-1]]))
    assert passed.verdict.value == "pass", passed.reasons
    assert passed.complete is not None

    history = History(started_ns=0, ended_ns=90_000_000)
    history.sent = [sent(0, "dedup-order", "m-2", 4)]
    at = 50_000_000
    again = (
        write(
            partial, outcome=WriteOutcome.REJECTED, before=partial, before_known=True, started_ns=at
        )
        if redelivered_end is None
        else write(
            redelivered_end, before=partial, before_known=True, condition=None, started_ns=at
        )
    )
    history.invocations = [
        invocation(
            "r-2",
            [record("m-2", "dedup-order")],
            [write(partial, before_known=True, started_ns=10_000_000)],
            outcome=InvocationOutcome.CRASH,
            started_ns=10_000_000,
        ),
        invocation("r-3", [record("m-2", "dedup-order", 2)], [again], started_ns=at),
    ]
    history.acks = [Ack(message_id="m-2", acked_ns=80_000_000)]
    end: EndState = end_state([redelivered_end or partial])
    return check(history, end, learned_before={passed.outcome: passed.complete})


def _order(order_id: str, **attributes: TypedItem) -> TypedItem:
    return {"id": _s(order_id), **attributes}


def test_a_claim_whose_details_go_in_a_map_is_lost_when_the_map_was_never_filled() -> None:
    details = {"M": {"quantity": _n(1), "total_cents": _n(350)}}
    judged = _judged(
        [
            _order("other-order", status=_s("PENDING"), details={"M": {}}),
            _order("other-order", status=_s("DONE"), details=details),
        ],
        _order("dedup-order", status=_s("PENDING"), details={"M": {}}),
    )
    assert judged.counts.lost_outcomes == 1, judged.reasons


def test_a_claim_holding_a_map_completed_by_paths_inside_it_is_lost_half_way() -> None:
    received = {"M": {"received": {"BOOL": True}}}
    done = {"M": {"received": {"BOOL": True}, "quantity": _n(1), "total_cents": _n(350)}}
    judged = _judged(
        [
            _order("other-order", status=_s("PENDING"), details=received),
            _order("other-order", status=_s("DONE"), details=done),
        ],
        _order("dedup-order", status=_s("PENDING"), details=received),
    )
    assert judged.counts.lost_outcomes == 1, judged.reasons


def test_a_claim_with_placeholders_for_the_details_is_lost_without_them() -> None:
    judged = _judged(
        [
            _order("other-order", status=_s("PENDING"), quantity=_n(0), total_cents=_n(0)),
            _order("other-order", status=_s("DONE"), quantity=_n(1), total_cents=_n(350)),
        ],
        _order("dedup-order", status=_s("PENDING"), quantity=_n(0), total_cents=_n(0)),
    )
    assert judged.counts.lost_outcomes == 1, judged.reasons


def test_an_order_left_at_a_status_complete_ones_only_passed_through_is_lost() -> None:
    # The claim carries every detail and every name: only its status says it never got done.
    judged = _judged(
        [
            _order("other-order", status=_s("PROCESSING"), quantity=_n(1), total_cents=_n(350)),
            _order("other-order", status=_s("DONE"), quantity=_n(1), total_cents=_n(350)),
        ],
        _order("dedup-order", status=_s("PROCESSING"), quantity=_n(4), total_cents=_n(1100)),
    )
    assert judged.counts.lost_outcomes == 1, judged.reasons


def test_a_value_no_complete_outcome_held_on_the_way_judges_nothing() -> None:
    # Orders where nothing failed were received once; the redelivered one says 2. No
    # outcome held another receive count on its way to complete: the order is complete.
    judged = _judged(
        [_order("other-order", quantity=_n(1), total_cents=_n(350), receives=_s("1"))],
        _order("dedup-order", quantity=_n(4), total_cents=_n(1100), receives=_s("1")),
        redelivered_end=_order(
            "dedup-order", quantity=_n(4), total_cents=_n(1100), receives=_s("2")
        ),
    )
    assert judged.counts.lost_outcomes == 0, judged.reasons


def test_the_redelivery_that_finishes_an_order_left_processing_takes_it_over() -> None:
    judged = _judged(
        [
            _order("other-order", status=_s("PROCESSING"), quantity=_n(1), total_cents=_n(350)),
            _order("other-order", status=_s("DONE"), quantity=_n(1), total_cents=_n(350)),
        ],
        _order("dedup-order", status=_s("PROCESSING"), quantity=_n(4), total_cents=_n(1100)),
        redelivered_end=_order(
            "dedup-order", status=_s("DONE"), quantity=_n(4), total_cents=_n(1100)
        ),
    )
    assert judged.counts.duplicate_writes == 0, judged.reasons
    assert judged.counts.lost_outcomes == 0
    assert judged.verdict.value == "pass", judged.reasons


def _with_total(outcome: TypedItem, customer_total: TypedItem | None) -> list[WriteRecord]:
    writes = [write(outcome, before_known=True, started_ns=1_000_000)]
    if customer_total is not None:
        writes.append(
            write(customer_total, before_known=True, condition=None, started_ns=2_000_000)
        )
    return writes


def test_a_message_acknowledged_without_the_change_complete_deliveries_make_beside_is_lost() -> (
    None
):
    # Where nothing failed each order is stored and its customer's total changed; here the
    # order was stored, the environment crashed, and the redelivery found the order and
    # skipped it: the total never got the order.
    total = {"id": _s("customer#c-1"), "total": _n(1)}
    clean = History(started_ns=0, ended_ns=90_000_000)
    clean.sent = [sent(0, "other-order", "m-1", 1)]
    other = _order("other-order", quantity=_n(1), total_cents=_n(350))
    clean.invocations = [
        invocation("r-1", [record("m-1", "other-order")], _with_total(other, total))
    ]
    clean.acks = [Ack(message_id="m-1", acked_ns=80_000_000)]
    passed = check(clean, end_state([other, total]))
    learned = passed.complete
    assert learned is not None
    assert learned.beside == frozenset({"id=customer#c-1"})

    def crashed(total_before_crash: TypedItem | None) -> Check:
        order = _order("dedup-order", quantity=_n(4), total_cents=_n(1100))
        history = History(started_ns=0, ended_ns=90_000_000)
        history.sent = [sent(0, "dedup-order", "m-2", 4)]
        history.invocations = [
            invocation(
                "r-2",
                [record("m-2", "dedup-order")],
                _with_total(order, total_before_crash),
                outcome=InvocationOutcome.CRASH,
            ),
            invocation(
                "r-3",
                [record("m-2", "dedup-order", 2)],
                [write(order, outcome=WriteOutcome.REJECTED, before=order, before_known=True)],
                started_ns=50_000_000,
            ),
        ]
        history.acks = [Ack(message_id="m-2", acked_ns=80_000_000)]
        return check(history, end_state([order]), learned_before={passed.outcome: learned})

    gap = crashed(None)
    assert gap.counts.lost_outcomes == 1, gap.reasons
    assert any("no write of id=customer#c-1" in r for r in gap.reasons), gap.reasons
    # The crash came after the total's change: nothing is missing.
    after = crashed({"id": _s("customer#c-1"), "total": _n(5)})
    assert after.counts.lost_outcomes == 0, after.reasons
