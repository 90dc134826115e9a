"""Thresholds on a repeat's statistics: METRIC.AGGREGATE, judged once per variant."""

from __future__ import annotations

from typing import Any

import pytest

from loadtest.errors import ThresholdError
from loadtest.model.figures.thresholds import MetricKind, parse_threshold
from loadtest.model.search.repeats import repeat_failed, repeat_summary
from loadtest.reports.judge import apply_thresholds


def run(variant: str, seed: int, duplicate_writes: int, p99_us: int) -> dict[str, Any]:
    return {
        "variant": variant,
        "seed": seed,
        "verdict": "pass",
        "counts": {"duplicate_writes": duplicate_writes, "overlapping_ids": 3},
        "latency_us": {"end_to_end": {"p50": p99_us // 2, "p99": p99_us}},
        "throughput": {"messages_per_s": 100.0 + seed},
        "thresholds": [],
    }


RUNS = [run("racy", 1, 4, 200_000), run("racy", 2, 0, 300_000), run("racy", 3, 7, 900_000)]


@pytest.mark.parametrize(
    ("text", "metric", "aggregate", "kind", "value"),
    [
        ("duplicate_writes.runs_with > 0", "counts.duplicate_writes", "runs_with", MetricKind.COUNT, 0),
        ("counts.lost_outcomes.max == 0", "counts.lost_outcomes", "max", MetricKind.COUNT, 0),
        ("end_to_end.p99.median < 250ms", "latency_us.end_to_end.p99", "median", MetricKind.LATENCY_US, 250_000),
        ("duplicate_writes.share_upper < 0.2", "counts.duplicate_writes", "share_upper", MetricKind.RATE, 0.2),
        ("throughput.messages_per_s.min > 50", "throughput.messages_per_s", "min", MetricKind.RATE, 50),
    ],
)  # fmt: skip
def test_aggregates_parse(
    text: str, metric: str, aggregate: str, kind: MetricKind, value: float
) -> None:
    threshold = parse_threshold(text)
    assert (threshold.metric, threshold.aggregate, threshold.kind, threshold.value) == (
        metric,
        aggregate,
        kind,
        value,
    )


def test_a_stat_named_like_an_aggregate_is_the_plain_metric() -> None:
    assert parse_threshold("end_to_end.max < 1s").aggregate is None
    assert parse_threshold("end_to_end.max.max < 1s").aggregate == "max"


def test_bad_aggregates_are_refused() -> None:
    with pytest.raises(ThresholdError, match=r"unknown metric 'duplicate_writes\.mean'"):
        parse_threshold("duplicate_writes.mean > 0")
    with pytest.raises(ThresholdError, match="remove the unit"):
        parse_threshold("duplicate_writes.runs_with > 2ms")
    with pytest.raises(ThresholdError, match="add a unit"):
        parse_threshold("end_to_end.p99.median < 250")


def test_repeat_thresholds_are_judged_on_the_statistics_not_on_each_run() -> None:
    thresholds = [
        parse_threshold("duplicate_writes.runs_with == 2"),
        parse_threshold("racy: end_to_end.p99.median < 250ms"),
        parse_threshold("duplicate_writes.max <= 7"),
    ]
    judged = apply_thresholds({"runs": RUNS}, thresholds)
    assert all(r["thresholds"] == [] and r["verdict"] == "pass" for r in judged["runs"])
    summary = repeat_summary(RUNS, [1, 2, 3], thresholds)
    assert summary["thresholds"] == [
        {"variant": "racy", "expr": "duplicate_writes.runs_with == 2", "observed": 2, "ok": True},
        {
            "variant": "racy",
            "expr": "racy: end_to_end.p99.median < 250ms",
            "observed": 300_000,
            "ok": False,
        },
        {"variant": "racy", "expr": "duplicate_writes.max <= 7", "observed": 7, "ok": True},
    ]
    assert repeat_failed({"repeat": summary})


def test_the_spread_and_the_shares() -> None:
    stats = repeat_summary(RUNS, [1, 2, 3])["variants"]["racy"]
    assert stats["runs"] == 3 and stats["seeds"] == [1, 2, 3]
    assert stats["counts"]["duplicate_writes"] == pytest.approx(
        {
            "min": 0,
            "median": 4,
            "max": 7,
            "runs_with": 2,
            "share": 2 / 3,
            "share_lower": 0.09429932405024,
            "share_upper": 0.99159624134004,
        }
    )
    assert stats["throughput"]["messages_per_s"]["median"] == 102.0
    [dup] = [a for a in stats["anomalies"] if a["count"] == "duplicate_writes"]
    assert dup["sentence"] == (
        "2 of 3 runs showed a duplicate write: at 95% confidence it shows in 9% to 100% of "
        "such runs"
    )
    assert stats["exposure"]["runs_with"] == 3
