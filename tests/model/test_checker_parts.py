"""The checker's bounded reading: judged in parts as whole, and messages found by hash.

A run's accepted outcome writes past ``WRITES_PER_PART`` are judged a part of
business ids at a time; a message acknowledged or dead-lettered is found by its
id's hash. Both must answer exactly as holding everything would.
"""

from __future__ import annotations

import random

import pytest

from loadtest.model.checker import Check, check, parts
from loadtest.model.checker.sent import ACKED, DEAD_LETTERED, POISON, Messages
from loadtest.model.history.log import (
    Ack,
    DeadLetter,
    EndState,
    History,
    Invocation,
    TypedItem,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.workload import ids
from loadtest.spool import FileFrames
from tests.model.builders import end_state, invocation, order_item, record, write
from tests.model.builders import sent as sent_message


def _mixed_run(seed: int, ids: int = 40, copies: int = 4) -> tuple[History, EndState]:
    """A run where each id's copies race: some ids guarded by the condition, some written
    twice, some resent with other details, every delivery also writing an audit row."""
    rng = random.Random(seed)
    history = History(frames=FileFrames, started_ns=0, ended_ns=10**9)
    messages = []
    for b in range(ids):
        business_id = f"order-{b}"
        for k in range(copies):
            quantity = 1 + (k == copies - 1 and b % 5 == 0)  # every 5th id: a last, other resend
            messages.append((f"m-{b}-{k}", business_id, quantity))
    rng.shuffle(messages)
    guarded_ids = {f"order-{b}" for b in range(ids) if rng.random() < 0.6}
    history.sent = [sent_message(i, bid, mid, q) for i, (mid, bid, q) in enumerate(messages)]
    stored: dict[str, TypedItem] = {}
    invocations: list[Invocation] = []
    acks, dead = [], []
    for n, (message_id, business_id, quantity) in enumerate(messages):
        started = 1_000_000 * (n + 1)
        item = order_item(business_id, quantity)
        before = stored.get(business_id)
        guarded = business_id in guarded_ids
        writes: list[WriteRecord]
        if before is None or not guarded:
            writes = [write(item, before=before, before_known=True, started_ns=started)]
            stored[business_id] = item
        else:
            writes = [
                write(
                    item,
                    outcome=WriteOutcome.REJECTED,
                    before=before,
                    before_known=True,
                    started_ns=started,
                )
            ]
        audit = {"pk": {"S": f"audit#{message_id}"}, "order": {"S": business_id}}
        writes.append(
            write(audit, condition=None, write_key={"pk": audit["pk"]}, started_ns=started)
        )
        invocations.append(invocation(f"r-{n}", [record(message_id, business_id)], writes))
        if rng.random() < 0.1:
            dead.append(DeadLetter(message_id=message_id, receive_count=3, seen_ns=started))
        elif rng.random() < 0.95:
            acks.append(Ack(message_id=message_id, acked_ns=started + 1))
    history.invocations = invocations
    history.acks = acks
    history.dead_letters = dead
    return history, end_state(list(stored.values()))


def _same(whole: Check, in_parts: Check) -> None:
    assert in_parts.counts == whole.counts
    assert (in_parts.verdict, in_parts.reasons, in_parts.inconclusive, in_parts.notes) == (
        whole.verdict,
        whole.reasons,
        whole.inconclusive,
        whole.notes,
    )
    assert dict(in_parts.templates) == dict(whole.templates)
    assert list(in_parts.decisions) == list(whole.decisions)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_judged_in_parts_as_whole(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    history, end = _mixed_run(seed)
    whole = check(history, end)
    monkeypatch.setattr(parts, "WRITES_PER_PART", 7)
    in_parts = check(history, end)
    _same(whole, in_parts)
    counts = whole.counts
    # The run has every kind of write the parts must carry, so the test cannot pass empty.
    assert counts.duplicate_writes > 0 and counts.conflicting_writes > 0
    assert counts.writes_rejected > 0 and counts.side_writes == len(history.sent)
    assert counts.lost_outcomes > 0 and counts.unexpected_dead_letters > 0
    # The decisions come in the history's order, each of its own write.
    assert [d.write for d in in_parts.decisions] == [
        w for inv in history.invocations for w in inv.writes
    ]


def test_outcomes_under_a_key_per_delivery_judged_in_parts_as_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The copies model: each delivery stores the outcome under its own messageId key."""
    history = History(frames=FileFrames)
    history.sent = [sent_message(i, f"o-{i % 9}", f"m-{i}", 1 + (i == 20)) for i in range(30)]
    items = []
    invocations = []
    for i in range(30):
        item = {
            "pk": {"S": f"m-{i}"},
            "order": {"S": f"o-{i % 9}"},
            "quantity": {"N": str(1 + (i == 20))},
        }
        items.append(item)
        invocations.append(
            invocation(
                f"r-{i}",
                [record(f"m-{i}", f"o-{i % 9}")],
                [write(item, condition=None, write_key={"pk": item["pk"]}, started_ns=i * 10**6)],
            )
        )
    history.invocations = invocations
    history.acks = [Ack(f"m-{i}", 10**9) for i in range(30)]
    end = EndState(0, 0, 0, {f"m-{i}": item for i, item in enumerate(items)})
    whole = check(history, end)
    monkeypatch.setattr(parts, "WRITES_PER_PART", 4)
    _same(whole, check(history, end))
    assert whole.outcome.startswith("outcomes stored under a key that changes per delivery")
    assert whole.counts.duplicate_writes == 30 - 9
    assert whole.counts.conflicting_writes == 1


def _flags(messages: Messages) -> list[int]:
    return [flags for _, _, flags in messages.each()]


def test_messages_found_by_an_id_whose_hash_another_shares(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ids with one hash are told apart by the ids themselves; a foreign id is passed over."""
    monkeypatch.setattr(
        ids, "hash", lambda text: 7 if text.startswith("same") else len(text), raising=False
    )
    history = History()
    history.sent = [
        sent_message(0, "a", "same-1"),
        sent_message(1, "a", "same-2"),
        sent_message(2, "b", "other"),
        sent_message(3, "c", "same-3", poison=True),
    ]
    messages = Messages(history.sent)
    messages.settle(
        [Ack("same-2", 1), Ack("other", 1), Ack("same-9", 1), Ack("unknown", 1)],
        [DeadLetter("same-3", 1, 3)],
    )
    assert _flags(messages) == [0, ACKED, ACKED, POISON | DEAD_LETTERED]


def test_details_are_distinct_per_business_id_in_the_order_sent() -> None:
    history = History()
    history.sent = [
        sent_message(0, "a", "m-1", 2),
        sent_message(1, "a", "m-2", 5),
        sent_message(2, "a", "m-3", 2),
        sent_message(3, "b", "m-4", 2),
    ]
    messages = Messages(history.sent)
    assert messages.details_for("a") == [{"quantity": 2}, {"quantity": 5}]
    assert [position for _, position, _ in messages.each()] == [0, 1, 0, 0]
    assert messages.details_for("nobody") == []
