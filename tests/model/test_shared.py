"""Equal values decoded once per run, and a history's repr that stays short."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from loadtest.model.history.log import (
    History,
    ObserverFault,
    ReadRecord,
    SentMessage,
    TypedItem,
    UnobservedCall,
    WriteOutcome,
    WriteRecord,
)
from loadtest.model.history.observation import Observation, SharedValues, WriteBegun, decode, encode


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


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_items = st.dictionaries(
    st.text(max_size=3), st.dictionaries(st.sampled_from("SNBL"), _values, max_size=1), max_size=3
)
_observations = st.one_of(
    st.builds(
        WriteRecord,
        operation=st.text(max_size=5),
        key=_items,
        condition=st.none() | st.text(max_size=5),
        outcome=st.sampled_from(WriteOutcome),
        item_before=st.none() | _items,
        item_after=st.none() | _items,
        before_known=st.booleans(),
        started_ns=st.integers(min_value=0),
        ended_ns=st.integers(min_value=0),
        error_code=st.none() | st.text(max_size=5),
        requested=st.none() | _items,
    ),
    st.builds(
        WriteBegun,
        call_id=st.text(max_size=5),
        operation=st.text(max_size=5),
        request_id=st.text(max_size=5),
        started_ns=st.integers(min_value=0),
        keys=st.lists(_items, max_size=3).map(tuple),
        requested=st.lists(st.none() | _items, max_size=3).map(tuple),
    ),
    st.builds(
        ReadRecord,
        key=_items,
        found=st.none() | _items,
        consistent=st.booleans(),
        started_ns=st.integers(min_value=0),
        ended_ns=st.integers(min_value=0),
    ),
    st.builds(UnobservedCall, operation=st.text(max_size=5), reason=st.text(max_size=5)),
    st.builds(ObserverFault, operation=st.text(max_size=5), error=st.text(max_size=5)),
)


@given(_observations)
def test_an_observation_line_is_its_fields_as_json(observation: Observation) -> None:
    """The line is the record's fields as they are (no copy): the same text a deep copy gave."""
    body: dict[str, Any] = dataclasses.asdict(observation)
    line = encode(observation)
    body["t"] = json.loads(line)["t"]
    assert line == json.dumps(body, separators=(",", ":"), default=str) + "\n"
    assert decode(line) == observation
