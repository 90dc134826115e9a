"""Latency metrics: HdrHistograms of integer microseconds, and their export.

Pure (no clock): callers pass durations in. ``record_value`` of hdrhistogram
returns False instead of raising for a value outside the trackable range;
those are counted in ``out_of_range`` so a slow outlier never silently
vanishes from p99.9.
"""

from __future__ import annotations

import io
import math
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import compress
from typing import Any

from hdrh.histogram import HdrHistogram

from loadtest.model.history.log import Ack, History, WriteOutcome
from loadtest.model.workload.ids import IdIndex

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour
SIGNIFICANT_FIGURES = 3
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99_9", 99.9),
)
"""Report keys and their percentile on HdrHistogram's 0-100 scale: the one list."""

LATENCY_STATS: tuple[str, ...] = ("count", "min", *(k for k, _ in PERCENTILES), "max", "mean")
"""The keys of one latency object in the report (``runs[].latency_us.NAME``)."""


def format_us(value_us: float) -> str:
    """A duration given in microseconds, in the largest unit that keeps it readable.

    The one way a latency reads to a person, in every report and warning.
    """
    magnitude = abs(value_us)
    if magnitude >= 1_000_000:
        return f"{value_us / 1_000_000:.2f} s"
    if magnitude >= 1_000:
        return f"{value_us / 1_000:.1f} ms"
    return f"{value_us:.0f} µs"


def percentile_label(key: str) -> str:
    """``p99_9`` -> ``p99.9``: how a percentile key reads to a person."""
    return key.replace("_", ".")


LATENCY_NAMES: tuple[str, ...] = (
    "end_to_end",
    "queue_dwell",
    "handler",
    "write",
    "write_accepted",
    "write_rejected",
    "write_error",
    "ack",
)
"""Every latency a run reports (``runs[].latency_us``), in microseconds:

- ``end_to_end``: intended send time to the first acknowledgement (open-loop);
- ``queue_dwell``: actual send to the message's first receive;
- ``handler``: each invocation, in its execution environment;
- ``write``: each DynamoDB write to the orders table, and per outcome
  (``write_accepted``, ``write_rejected`` by its condition, ``write_error``);
- ``ack``: each invocation's acknowledgement, from the moment it asked for its
  messages to be deleted to the DeleteMessageBatch that confirmed it (calls are
  shared across invocations, so this includes the wait to share one).
"""
HGRM_SCALE = 1000.0
"""``.hgrm`` files list milliseconds (values are recorded in microseconds)."""


def new_histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_FIGURES)


@dataclass
class Latency:
    """One latency distribution (in microseconds) with its out-of-range count."""

    histogram: HdrHistogram = field(default_factory=new_histogram)
    out_of_range: int = 0

    def record_ns(self, duration_ns: int) -> None:
        """Record a duration given in nanoseconds (rounded to whole microseconds, min 1)."""
        value_us = max(LOWEST_US, round(duration_ns / 1000))
        if not self.histogram.record_value(value_us):
            self.out_of_range += 1

    def summary(self) -> dict[str, Any]:
        """The report's latency object: count, min, p50..p99_9, max, mean (in microseconds)."""
        h = self.histogram
        count = h.get_total_count()
        out: dict[str, Any] = {"count": count}
        if count == 0:
            out.update(
                {"min": None, **{k: None for k, _ in PERCENTILES}, "max": None, "mean": None}
            )
        else:
            buckets = filled_buckets(h)
            out["min"] = h.get_min_value()
            values = values_at_percentiles(h, [p for _, p in PERCENTILES], buckets)
            out.update({key: values.get(p, 0) for key, p in PERCENTILES})
            out["max"] = h.get_max_value()
            out["mean"] = round(mean_value(h, buckets), 1)
        out["out_of_range"] = self.out_of_range
        return out

    def encoded(self) -> str:
        """HdrHistogram's compressed base64 form, mergeable with ``HdrHistogram.decode``."""
        encoded: bytes = self.histogram.encode()
        return encoded.decode("ascii")


_SCAN_BUCKETS = 64
"""How many buckets ``filled_buckets`` compares with zeros at once."""


def filled_buckets(histogram: HdrHistogram) -> list[tuple[int, int]]:
    """``(index, count)`` of each non-empty bucket, in value order.

    A one-hour range at 3 significant figures has some 23,000 buckets and a run's
    latencies fill a few hundred: hdrh's percentile and mean walk every bucket in
    Python (several ms per summary), this finds the filled ones at C speed. The counts'
    bytes are compared with zeros a block of buckets at a time, and only a block that
    differs is read bucket by bucket.
    """
    counts = histogram.counts
    length = histogram.counts_len
    view = memoryview(counts)
    width = view.itemsize
    data = view.cast("B")[: length * width].tobytes()
    block = _SCAN_BUCKETS * width
    zeros = bytes(block)
    found: list[tuple[int, int]] = []
    for start in range(0, len(data), block):
        if data[start : start + block] != zeros[: len(data) - start]:
            first = start // width
            last = min(first + _SCAN_BUCKETS, length)
            found.extend(
                (index, int(counts[index]))
                for index in compress(range(first, last), counts[first:last])
            )
    return found


def values_at_percentiles(
    histogram: HdrHistogram,
    percentiles: list[float],
    buckets: list[tuple[int, int]] | None = None,
) -> dict[float, int]:
    """``histogram.get_percentile_to_value_dict(percentiles)`` (each percentile's value,
    duplicates once), from one walk over the filled buckets (``buckets``, from
    ``filled_buckets``) instead of hdrh's walk over every bucket."""
    out: dict[float, int] = {}
    pending = iter(sorted(set(percentiles)))
    percentile = next(pending, None)
    if percentile is None:
        return out
    target = histogram.get_target_count_at_percentile(percentile)
    total = 0
    for index, count in buckets if buckets is not None else filled_buckets(histogram):
        total += count
        while total >= target:
            value = histogram.get_value_from_index(index)
            out[percentile] = (  # as hdrh: the 0th percentile is the bucket's lowest value
                histogram.get_highest_equivalent_value(value)
                if percentile
                else histogram.get_lowest_equivalent_value(value)
            )
            percentile = next(pending, None)
            if percentile is None:
                return out
            target = histogram.get_target_count_at_percentile(percentile)
    return out


def mean_value(histogram: HdrHistogram, buckets: list[tuple[int, int]] | None = None) -> float:
    """``histogram.get_mean_value()``, the same figure without its per-bucket iterator.

    hdrh's own walks every bucket up to the largest value through a Python iterator:
    about 0.6 s per call on a one-hour range, more than a whole report's other work.
    This weighs each non-empty bucket (``buckets``, from ``filled_buckets``) by its
    median equivalent value, exactly as hdrh does.
    """
    total_count = histogram.get_total_count()
    if not total_count:
        return 0.0
    total = 0
    for index, count in buckets if buckets is not None else filled_buckets(histogram):
        value = histogram.get_value_from_index(index)
        total += count * int(histogram._hdr_median_equiv_value(value))
    return total / int(total_count)


def latencies(history: History) -> dict[str, Latency]:
    """Every latency of ``LATENCY_NAMES`` measured from a run's history.

    A message's times are joined by position (its id found in an ``IdIndex``), so
    measuring a million-message run holds a few arrays, not a dictionary per message.
    """
    out = {name: Latency() for name in LATENCY_NAMES}
    ids = IdIndex(len(history.sent))
    intended, sent_ns = array("q"), array("q")
    for m in history.sent:
        if m.message_id:
            ids.add(m.message_id)
            intended.append(m.intended_ns)
            sent_ns.append(m.sent_ns)
    ids.settle(lambda: (m.message_id for m in history.sent if m.message_id))
    acked = bytearray(len(ids))
    """Whether each message's first acknowledgement is measured (a later one is not)."""
    for ack in history.acks:
        for position in ids.positions(ack.message_id):
            if not acked[position]:
                acked[position] = 1
                out["end_to_end"].record_ns(ack.acked_ns - intended[position])
    del acked
    received = bytearray(len(ids))
    """Whether each message's first delivery is measured."""
    for invocation in history.invocations:
        for record in invocation.records:
            for position in ids.positions(record.message_id):
                if not received[position]:
                    received[position] = 1
                    out["queue_dwell"].record_ns(invocation.received_ns - sent_ns[position])
        out["handler"].record_ns(invocation.ended_ns - invocation.started_ns)
        for w in invocation.writes:
            if w.outcome is WriteOutcome.INDETERMINATE:
                continue  # no answer came back: there is no latency to measure
            duration_ns = w.ended_ns - w.started_ns
            out["write"].record_ns(duration_ns)
            out[f"write_{w.outcome.value}"].record_ns(duration_ns)
    del received
    for duration_ns in _ack_calls(history.acks):
        out["ack"].record_ns(duration_ns)
    return out


def _ack_calls(acks: Iterable[Ack]) -> array[int]:
    """How long each acknowledgement call took: each distinct (request time, answer time)
    once, as one call acknowledges several messages.

    The engine logs acknowledgements as they are answered, so a call's are together and
    only the latest answer time's requests are kept; a log in another order is read again
    with every pair kept.
    """
    durations = array("q")
    answered = _NONE
    requests: set[int] = set()
    for ack in acks:
        if ack.requested_ns is None:
            continue
        if ack.acked_ns != answered:
            if ack.acked_ns < answered:
                pairs = {(a.requested_ns, a.acked_ns) for a in acks if a.requested_ns is not None}
                return array("q", (acked - requested for requested, acked in pairs))
            answered, requests = ack.acked_ns, set()
        if ack.requested_ns not in requests:
            requests.add(ack.requested_ns)
            durations.append(ack.acked_ns - ack.requested_ns)
    return durations


_NONE = -(2**63)
"""No time yet (a time is a ``time.monotonic_ns()`` reading)."""


def decode(encoded: str) -> HdrHistogram:
    """A histogram from the JSON report's ``latency_hdr`` (see ``Latency.encoded``)."""
    histogram: HdrHistogram = HdrHistogram.decode(encoded.encode("ascii"))
    return histogram


HGRM_TICKS_PER_HALF_DISTANCE = 5
"""The ``.hgrm`` rows per halving of the distance to 100% (hdrh's default)."""


def hgrm(histogram: HdrHistogram) -> str:
    """HdrHistogram's percentile distribution text (the ``.hgrm`` format), in milliseconds.

    The bytes of ``histogram.output_percentile_distribution(buffer, HGRM_SCALE)``, from
    the filled buckets: hdrh's percentile iterator and its mean and standard deviation
    step through every bucket up to the largest value in Python, about 0.1 s per file
    on a one-hour range. A bucket left empty never ends a step of its iterator, so
    visiting the filled ones alone, in order, yields its rows.
    """
    buckets = filled_buckets(histogram)
    total_count = int(histogram.get_total_count())
    if not total_count or sum(count for _, count in buckets) != total_count:
        buffer = io.BytesIO()  # nothing recorded, or counts hdrh itself would trip on
        histogram.output_percentile_distribution(buffer, HGRM_SCALE)
        return buffer.getvalue().decode("ascii")
    figures = histogram.significant_figures
    lines = [
        b"%12s %14s %10s %14s\n\n" % (b"Value", b"Percentile", b"TotalCount", b"1/(1-Percentile)")
    ]
    row = f"%12.{figures}f %2.12f %10d %14.2f\n".encode()
    last_row = f"%12.{figures}f %2.12f %10d\n".encode()
    for value, percentile, count in _percentile_steps(histogram, buckets, total_count):
        if percentile != 100:
            other = 1 / (1 - percentile / 100)
            lines.append(row % (value / HGRM_SCALE, percentile / 100, count, other))
        else:
            lines.append(last_row % (value / HGRM_SCALE, percentile / 100, count))
    mean = mean_value(histogram, buckets)
    deviations = 0.0
    for index, count in buckets:
        deviation = histogram._hdr_median_equiv_value(histogram.get_value_from_index(index)) * 1.0
        deviation -= mean
        deviations += (deviation * deviation) * count
    stddev = math.sqrt(deviations / total_count)
    lines.append(
        f"#[Mean    = %12.{figures}f, StdDeviation   = %12.{figures}f]\n".encode()
        % (mean / HGRM_SCALE, stddev)
    )
    lines.append(
        f"#[Max     = %12.{figures}f, TotalCount     = %12.{figures}f]\n".encode()
        % (histogram.get_max_value() / HGRM_SCALE, total_count)
    )
    lines.append(
        b"#[Buckets = %12d, SubBuckets     = %12d]\n"
        % (histogram.bucket_count, histogram.sub_bucket_count)
    )
    return b"".join(lines).decode("ascii")


def _percentile_steps(
    histogram: HdrHistogram, buckets: list[tuple[int, int]], total_count: int
) -> Iterator[tuple[int, float, int]]:
    """hdrh's ``PercentileIterator`` over the filled ``buckets``: (value iterated to,
    percentile level iterated to, count up to it) per step, in its order.

    Its steps, from 0% on, each end at the first filled bucket whose running count
    reaches the level (several levels may end in one bucket); each next level is closer
    to 100% by ``100 / (ticks * 2 ** (log2(100 / gap) + 1))``, and once every count is
    taken, one last step ends at 100%.
    """
    level: float = 0
    last_taken = False
    position, fresh, running = 0, True, 0
    while True:
        # Its has_next() comes before the bucket's count is added.
        if running >= total_count:
            if last_taken:
                return
            level, last_taken = 100.0, True
        index, count = buckets[position]
        if fresh:
            running, fresh = running + count, False
        if (100.0 * running) / total_count >= level:
            value = histogram.get_highest_equivalent_value(histogram.get_value_from_index(index))
            yield value, level, running
            gap = 100.0 - level
            if gap:
                half_distance = math.pow(2, (math.log(100 / gap) / math.log(2)) + 1)
                level += 100.0 / (HGRM_TICKS_PER_HALF_DISTANCE * half_distance)
        else:
            position, fresh = position + 1, True
