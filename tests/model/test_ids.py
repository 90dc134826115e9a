"""loadtest.model.workload.ids: ids found by their hash, exactly."""

from __future__ import annotations

import pytest

from loadtest.model.workload import ids
from loadtest.model.workload.ids import IdIndex


def _index(texts: list[str], expected: int = 0) -> IdIndex:
    index = IdIndex(expected)
    for text in texts:
        index.add(text)
    index.settle(lambda: texts)
    return index


def test_every_id_is_found_after_the_table_grows_past_its_size() -> None:
    texts = [f"id-{n}" for n in range(5000)]
    index = _index(texts)  # sized for none: it grows four times
    assert len(index) == 5000
    assert all(index.positions(text) == [n] for n, text in enumerate(texts))
    assert index.positions("id-5000") == []


def test_ids_that_share_a_hash_are_told_apart_by_themselves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ids, "hash", lambda text: 7 if "same" in text else len(text), raising=False)
    texts = ["same-1", "other", "same-2"] + [f"filler-{n:04d}" for n in range(3000)] + ["same-3"]
    index = _index(texts)
    assert index.positions("same-1") == [0]
    assert index.positions("same-2") == [2]
    assert index.positions("same-3") == [3003]
    assert index.positions("other") == [1]
    assert index.positions("filler-2999") == [3002]
    assert index.positions("same-4") == []  # shares the hash, never added


def test_an_id_added_twice_has_both_positions() -> None:
    index = _index(["a", "b", "a"])
    assert index.positions("a") == [0, 2]
    assert index.positions("b") == [1]


def test_ids_are_read_again_only_when_two_share_a_hash() -> None:
    index = IdIndex()
    index.add("a")

    def again() -> list[str]:
        raise AssertionError("read again")

    index.settle(again)
    assert index.positions("a") == [0]


def test_distinct_values_are_counted_past_the_table_size() -> None:
    from loadtest.model.workload.ids import count_distinct

    values = [n // 3 for n in range(9000)] + [5, 7, -1, 2**62] * 3
    assert count_distinct(values) == len(set(values))
    assert count_distinct([]) == 0
    with pytest.raises(ValueError):
        count_distinct([-(2**63)])
