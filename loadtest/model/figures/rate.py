"""Rate honesty: whether a run achieved the arrival rate its scenario asked for.

Pure (no clock, no I/O): callers pass times in. An open-loop run (arrival
``rate`` or ``ramp``) asks for a rate; when the producer could not send at it,
or the consumer could not keep up with what was sent (a backlog built up), the
live line, the summary and every report say so with both figures, and the
latency figures are put in context: with a backlog, end-to-end latency is
mostly time spent waiting in the queue (``queue_dwell``), not the consumer.

Owns ``RateWatch`` (the live view the engine updates about ten times a
second) and ``rate_figures`` (the report's ``rate`` block, from the history).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loadtest.model.figures.metrics import format_us
from loadtest.model.history.log import History
from loadtest.model.scenario.loading import Arrival, Scenario

SHORT_FRACTION = 0.9
"""Below this fraction of the requested rate, a rate counts as not reached."""
MIN_JUDGED_S = 1.0
"""A sending period shorter than this (in seconds) is too short to judge a rate."""
WINDOW_S = 2.0
"""The live line's achieved rate is measured over about this many seconds."""


def requested_per_s(scenario: Scenario) -> float | None:
    """The arrival rate the scenario asks for (the final one of a ramp); None for a burst."""
    workload = scenario.workload
    if workload.arrival in (Arrival.RATE, Arrival.RAMP) and workload.rate_per_s > 0:
        return float(workload.rate_per_s)
    return None


@dataclass
class RateWatch:
    """The live rate view: samples of (elapsed seconds, settled) and the backlog."""

    requested_per_s: float | None
    backlog_peak: int = 0
    note: str = ""
    """A short warning for the live line; empty while the rate holds."""
    _samples: list[tuple[float, int]] | None = None

    def sample(self, elapsed_s: float, sent: int, settled: int) -> str:
        """Record one observation; returns the live note (empty if all is well)."""
        backlog = max(0, sent - settled)
        self.backlog_peak = max(self.backlog_peak, backlog)
        samples = self._samples if self._samples is not None else []
        self._samples = samples
        samples.append((elapsed_s, settled))
        while len(samples) > 2 and samples[1][0] <= elapsed_s - WINDOW_S:
            samples.pop(0)
        requested = self.requested_per_s
        if requested is None or elapsed_s < MIN_JUDGED_S:
            self.note = ""
            return self.note
        start_s, start_settled = samples[0]
        span_s = elapsed_s - start_s
        achieved = (settled - start_settled) / span_s if span_s > 0 else 0.0
        sent_per_s = sent / elapsed_s
        behind = backlog > max(10.0, requested * 1.0) and achieved < SHORT_FRACTION * requested
        if behind or sent_per_s < SHORT_FRACTION * requested:
            self.note = (
                f"rate NOT reached: asked {requested:g}/s, consumed {achieved:.0f}/s, "
                f"sent {sent_per_s:.0f}/s, backlog {backlog}"
            )
        else:
            self.note = ""
        return self.note


def rate_figures(
    history: History,
    requested: float | None,
    backlog_peak: int,
    latency: dict[str, dict[str, Any]],
    stopped_early: str | None = None,
) -> dict[str, Any]:
    """The report's ``rate`` block: both figures, the backlog, and the verdict on them.

    ``sent_per_s`` is over the sending period (first to last send);
    ``consumed_per_s`` counts the messages settled during that same period, so
    a consumer that keeps up matches the sending rate and the tail after the
    last send does not count against it. ``latency`` is the run's latency
    summaries (``latency_us``), used to say how much of end-to-end latency was
    spent waiting in the queue.
    """
    sent_ns = [m.sent_ns for m in history.sent if m.message_id]
    start_ns = history.started_ns
    out: dict[str, Any] = {
        "requested_per_s": requested,
        "sent_per_s": None,
        "consumed_per_s": None,
        "backlog_peak": backlog_peak,
        "reached": None,
        "stopped_early": stopped_early,
        "queue_dwell_share_of_end_to_end_p50": None,
    }
    if not sent_ns:
        return out
    send_end_ns = max(sent_ns)
    span_s = (send_end_ns - start_ns) / 1e9
    settled_in_span = sum(1 for a in _first_acks(history) if a <= send_end_ns) + sum(
        1 for d in history.dead_letters if d.seen_ns <= send_end_ns
    )
    e2e = latency.get("end_to_end", {}).get("p50")
    dwell = latency.get("queue_dwell", {}).get("p50")
    if e2e and dwell is not None:
        out["queue_dwell_share_of_end_to_end_p50"] = round(min(1.0, dwell / e2e), 3)
    if stopped_early is not None:
        out["reached"] = False  # the workload was not even sent
    if (span_s < MIN_JUDGED_S and stopped_early is None) or span_s <= 0:
        return out
    sent_per_s = len(sent_ns) / span_s
    consumed_per_s = settled_in_span / span_s
    out["sent_per_s"] = round(sent_per_s, 1)
    out["consumed_per_s"] = round(consumed_per_s, 1)
    if requested is not None:
        out["reached"] = stopped_early is None and (
            sent_per_s >= SHORT_FRACTION * requested
            and consumed_per_s >= SHORT_FRACTION * min(requested, sent_per_s)
        )
    return out


def _first_acks(history: History) -> list[int]:
    first: dict[str, int] = {}
    for ack in history.acks:
        first.setdefault(ack.message_id, ack.acked_ns)
    return list(first.values())


def rate_warning(rate: dict[str, Any], latency: dict[str, dict[str, Any]]) -> str | None:
    """The summary's and reports' sentence when the requested rate was not reached."""
    if rate.get("reached") is not False:
        return None
    requested = rate.get("requested_per_s")
    asked = "no rate asked (burst)" if requested is None else f"asked {requested:g} messages/s"
    text = (
        f"the requested rate was NOT reached: {asked}, "
        f"sent {_per_s(rate['sent_per_s'])} and consumed {_per_s(rate['consumed_per_s'])} "
        f"while sending (backlog peaked at {rate['backlog_peak']} messages)"
    )
    if rate.get("stopped_early"):
        text += f"; {rate['stopped_early']}"
    e2e = latency.get("end_to_end", {}).get("p50")
    dwell = latency.get("queue_dwell", {}).get("p50")
    if e2e and dwell is not None:
        share = min(1.0, dwell / e2e)
        text += (
            f"; latency measures the backlog: of the end-to-end p50 ({format_us(e2e)}), "
            f"{share:.0%} ({format_us(dwell)} p50 queue dwell) was waiting in the queue"
        )
    return text


def _per_s(value: float | None) -> str:
    return "?/s" if value is None else f"{value:g}/s"
