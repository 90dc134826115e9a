"""Equal values decoded once per run, and a history's repr that stays short."""

from __future__ import annotations

from loadtest.model.history import History, SentMessage, TypedItem, WriteOutcome, WriteRecord
from loadtest.model.observation import SharedValues, decode, encode


def _write(request_id: str, item: TypedItem | None) -> WriteRecord:
    return WriteRecord(
        operation="PutItem",
        key={"id": {"S": "a"}},
        condition="attribute_not_exists(id)",
        outcome=WriteOutcome.ACCEPTED,
        item_before=None,
        item_after=item,
        before_known=True,
        started_ns=1,
        ended_ns=2,
        call_id=f"c-{request_id}",
        requested=item,
        request_id=request_id,
    )


def test_equal_items_decoded_twice_are_one_object() -> None:
    shared = SharedValues()
    item = {"id": {"S": "a"}, "quantity": {"N": "2"}}
    first = decode(encode(_write("r1", item)), shared)
    second = decode(encode(_write("r2", item)), shared)
    assert isinstance(first, WriteRecord) and isinstance(second, WriteRecord)
    assert first == _write("r1", item)
    assert first.item_after is second.item_after is second.requested
    assert first.key is second.key
    assert first.operation is second.operation


def test_items_in_another_attribute_order_are_not_shared() -> None:
    shared = SharedValues()
    one = decode(encode(_write("r1", {"id": {"S": "a"}, "q": {"N": "1"}})), shared)
    other = decode(encode(_write("r2", {"q": {"N": "1"}, "id": {"S": "a"}})), shared)
    assert isinstance(one, WriteRecord) and isinstance(other, WriteRecord)
    assert one.item_after is not other.item_after
    assert list(other.item_after or {}) == ["q", "id"]


def test_a_history_repr_counts_instead_of_listing() -> None:
    history = History()
    history.sent = [SentMessage(i, "x" * 100, "{}", 0, 0, f"m{i}") for i in range(1000)]
    text = repr(history)
    assert "sent=1000" in text
    assert len(text) < 200
