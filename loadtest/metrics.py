"""Latency metrics: HdrHistograms of integer microseconds.

Pure (no clock): callers pass durations in. ``record_value`` of hdrhistogram
returns False instead of raising for a value outside the trackable range;
those are counted in ``out_of_range`` so a slow outlier never silently
vanishes from p99.9.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour
SIGNIFICANT_FIGURES = 3
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0),
    ("p90", 90.0),
    ("p99", 99.0),
    ("p99_9", 99.9),
)
"""Report keys and their percentile on HdrHistogram's 0-100 scale."""


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
            out["min"] = h.get_min_value()
            for key, percentile in PERCENTILES:
                out[key] = h.get_value_at_percentile(percentile)
            out["max"] = h.get_max_value()
            out["mean"] = round(h.get_mean_value(), 1)
        out["out_of_range"] = self.out_of_range
        return out

    def encoded(self) -> str:
        """HdrHistogram's compressed base64 form, mergeable with ``HdrHistogram.decode``."""
        encoded: bytes = self.histogram.encode()
        return encoded.decode("ascii")
