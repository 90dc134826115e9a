"""Frozen, slotted records pickle by their fields' values, as dataclasses pickles them."""

from __future__ import annotations

import copy
import pickle

from loadtest.model.explore.points import Access, Delivery, Fault, Option, Point
from loadtest.model.history.records import Ack, SentMessage


def test_records_read_back_equal_through_pickle_and_copy() -> None:
    option = Option(Delivery(2, 3), Point.CALL, Access("write", frozenset({"k"})), Fault.CRASH)
    sent = SentMessage(1, "order", '{"id": "order"}', 0, 0, "m-1")
    for value in (option, sent, Ack("m-1", 5)):
        assert pickle.loads(pickle.dumps(value)) == value
        assert copy.deepcopy(value) == value


def test_a_state_pickled_by_dataclasses_own_methods_reads_back() -> None:
    # What dataclasses' slotted __getstate__ gave (and the golden reports' inputs hold).
    sent = SentMessage.__new__(SentMessage)
    sent.__setstate__([1, "order", "{}", 0, 0, "m-1", None, False])  # type: ignore[attr-defined]
    assert sent == SentMessage(1, "order", "{}", 0, 0, "m-1")
