"""Write latencies: an indeterminate write (no answer came back) has none to record."""

from __future__ import annotations

from loadtest.model.figures.metrics import latencies
from loadtest.model.history.log import History, WriteOutcome
from tests.model.builders import invocation, order_item, record, write


def test_an_indeterminate_write_is_not_a_latency() -> None:
    item = order_item("a", 1)
    history = History(
        invocations=[
            invocation(
                "r1",
                [record("m1", "a")],
                [write(item), write(item, outcome=WriteOutcome.INDETERMINATE)],
            )
        ]
    )
    measured = latencies(history)  # raised KeyError('write_indeterminate') before
    assert measured["write"].summary()["count"] == 1
    assert measured["write_accepted"].summary()["count"] == 1
