"""The .hgrm export round-trips through the hdrhistogram package to the same percentiles."""

from __future__ import annotations

import io
import random

from hdrh.histogram import HdrHistogram
from hypothesis import given, settings
from hypothesis import strategies as st

from loadtest.model.figures.metrics import (
    HGRM_SCALE,
    HIGHEST_US,
    Latency,
    decode,
    hgrm,
)
from loadtest.reports.text.formats import hgrm_files


def _parse(text: str) -> list[tuple[float, float, int]]:
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and not line.lstrip().startswith(("Value", "#")):
            rows.append((float(parts[0]), float(parts[1]), int(parts[2])))
    return rows


def _latency() -> Latency:
    rng = random.Random(3)
    latency = Latency()
    for _ in range(5000):
        latency.record_ns(int(rng.lognormvariate(10, 1.2) * 1000))  # ~22 ms median, long tail
    return latency


def test_hgrm_round_trips_to_the_same_distribution() -> None:
    """Every exported row is exact: TotalCount samples lie at or below its value."""
    latency = _latency()
    histogram = latency.histogram
    rows = _parse(hgrm(histogram))
    assert len(rows) > 50
    assert rows[-1][2] == 5000  # the last row holds every sample
    recorded = [
        (v.value_iterated_to, v.count_added_in_this_iter_step)
        for v in histogram.get_recorded_iterator()
    ]
    for value_ms, percentile, total_count in rows:
        value_us = round(value_ms * HGRM_SCALE)
        at_or_below = sum(count for value, count in recorded if value <= value_us)
        assert at_or_below == total_count
        # ... and the percentile column is that count's share, on HdrHistogram's 0-1 scale.
        assert total_count / 5000 >= percentile - 1e-9


def test_json_encoding_round_trips_to_the_same_percentiles_and_merges() -> None:
    latency = _latency()
    decoded = decode(latency.encoded())
    for percentile in (50.0, 90.0, 99.0, 99.9, 100.0):
        assert decoded.get_value_at_percentile(
            percentile
        ) == latency.histogram.get_value_at_percentile(percentile)
    assert hgrm(decoded) == hgrm(latency.histogram)
    merged = HdrHistogram(1, 3_600_000_000, 3)
    merged.add(decoded)
    merged.add(decode(latency.encoded()))
    assert merged.get_total_count() == 10_000


def test_hgrm_files_name_each_run_and_latency_with_samples() -> None:
    latency = _latency()
    report = {
        "runs": [
            {
                "variant": "conditional",
                "latency_hdr": {"end_to_end": latency.encoded(), "ack": Latency().encoded()},
            },
            {
                "variant": "path/to/app.py:handler",
                "cell": {"batch_size": 10},
                "latency_hdr": {"handler": latency.encoded()},
            },
        ]
    }
    files = hgrm_files(report)
    assert sorted(files) == [
        "00-conditional-end_to_end.hgrm",
        "01-path_to_app.py_handler-batch_size10-handler.hgrm",
    ]
    assert files["00-conditional-end_to_end.hgrm"] == hgrm(latency.histogram)


def _hdrh_hgrm(histogram: HdrHistogram) -> str:
    buffer = io.BytesIO()
    histogram.output_percentile_distribution(buffer, HGRM_SCALE)
    return buffer.getvalue().decode("ascii")


# On a range of 0.1 s at 2 significant figures (ten buckets of 128 values) the reference,
# hdrh's walk over every bucket of the range, stays short; the one-hour range at 3
# significant figures of a run's histograms is the test below.
@settings(max_examples=25)
@given(
    st.lists(st.tuples(st.integers(1, 100_000), st.integers(1, 1000)), max_size=40),
    st.booleans(),
)
def test_hgrm_is_the_text_hdrh_writes(values: list[tuple[int, int]], decoded: bool) -> None:
    histogram = HdrHistogram(1, 100_000, 2)
    for value_us, count in values:
        histogram.record_value(value_us, count)
    if decoded:
        histogram = HdrHistogram.decode(histogram.encode())
    assert hgrm(histogram) == _hdrh_hgrm(histogram)


def test_hgrm_is_the_text_hdrh_writes_up_to_the_end_of_the_range() -> None:
    latency = _latency()
    latency.histogram.record_value(HIGHEST_US)
    latency.histogram.record_value(1, 30)
    assert hgrm(latency.histogram) == _hdrh_hgrm(latency.histogram)
