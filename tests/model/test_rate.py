"""Rate honesty on synthetic histories: both figures, the backlog, and when a rate counts as missed."""

from __future__ import annotations

import dataclasses

from loadtest.model.figures.rate import RateWatch, rate_figures, rate_warning
from loadtest.model.history.log import Ack, History
from tests.model.builders import sent

S = 1_000_000_000


def _history(sent_per_s: float, consumed_per_s: float, seconds: int = 4) -> History:
    history = History(started_ns=0)
    count = int(sent_per_s * seconds)
    for i in range(count):
        message = sent(i, f"id{i}", f"m{i}")
        at = int(i * S / sent_per_s)
        history.sent.append(dataclasses.replace(message, intended_ns=at, sent_ns=at))
        history.acks.append(Ack(f"m{i}", int(i * S / consumed_per_s) + 1000))
    history.ended_ns = max(a.acked_ns for a in history.acks)
    return history


LATENCY = {"end_to_end": {"p50": 2_000_000}, "queue_dwell": {"p50": 1_900_000}}


def test_a_consumer_that_keeps_up_reaches_the_rate() -> None:
    rate = rate_figures(_history(100, 100), 100.0, 3, LATENCY)
    assert rate["reached"] is True
    assert rate["sent_per_s"] >= 99
    assert rate_warning(rate, LATENCY) is None


def test_a_backlog_is_reported_with_both_figures_and_the_latency_it_explains() -> None:
    rate = rate_figures(_history(400, 74), 400.0, 1200, LATENCY)
    assert rate["reached"] is False
    assert rate["consumed_per_s"] < 100
    warning = rate_warning(rate, LATENCY)
    assert warning is not None
    assert "asked 400 messages/s" in warning
    assert f"consumed {rate['consumed_per_s']:g}/s" in warning
    assert "backlog peaked at 1200" in warning
    assert "95% (1.90 s p50 queue dwell) was waiting in the queue" in warning


def test_a_run_stopped_for_its_backlog_never_reached_its_rate() -> None:
    rate = rate_figures(_history(400, 74, seconds=1), 400.0, 60, LATENCY, "stopped sending")
    assert rate["reached"] is False
    assert rate["stopped_early"] == "stopped sending"


def test_a_burst_asks_for_no_rate() -> None:
    rate = rate_figures(_history(400, 74), None, 10, LATENCY)
    assert rate["reached"] is None
    assert rate_warning(rate, LATENCY) is None


def test_the_live_note_names_both_rates_once_behind() -> None:
    watch = RateWatch(400.0)
    assert watch.sample(0.5, 200, 30) == ""  # too early to judge
    note = watch.sample(3.0, 1200, 220)
    assert "asked 400/s" in note and "backlog 980" in note
    assert watch.backlog_peak == 980
    keeping_up = RateWatch(100.0)
    keeping_up.sample(1.0, 100, 98)
    assert keeping_up.sample(3.0, 300, 297) == ""
