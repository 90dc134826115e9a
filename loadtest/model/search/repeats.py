"""Repeated runs: each figure's spread across seeds, each anomaly's share of runs.

Owns what ``--repeat N`` adds to a report (its ``repeat`` object): per
variant, every count, latency percentile and throughput figure as
min / median / max across the runs, how many runs showed each anomaly (a
count that fails or leaves the default verdict inconclusive when above zero)
with that share's Clopper-Pearson interval and the sentence that states it,
and the results of the thresholds that address these statistics
(``duplicate_writes.runs_with > 0``, ``end_to_end.p99.median < 250ms``; the
grammar is ``loadtest.model.figures.thresholds``'). Pure: it reads the runs of a
report and returns new data; the runs themselves stay in the report, every
one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from loadtest.model.checker import (
    BAD_WHEN_NONZERO,
    COUNT_NAMES,
    INCONCLUSIVE_WHEN_NONZERO,
    OPTIONAL_COUNT_NAMES,
)
from loadtest.model.figures.metrics import LATENCY_STATS
from loadtest.model.figures.thresholds import AGGREGATES, Threshold, evaluate_aggregate
from loadtest.model.search.confidence import CONFIDENCE, clopper_pearson, median, share_sentence

ANOMALIES: Mapping[str, str] = {
    "duplicate_writes": "a duplicate write",
    "conflicting_writes": "a conflicting write",
    "lost_outcomes": "a lost outcome",
    "unexpected_dead_letters": "an unexpected dead letter",
    "unsettled": "an unsettled message",
    "send_failures": "a failed send",
    "duplicate_effects": "a duplicate effect",
    "conflicting_effects": "a conflicting effect",
    "lost_effects": "a lost effect",
    "duplicate_side_writes": "a duplicate side write",
    "unobserved_calls": "a call the observer could not interpret",
    "observer_errors": "an observer error",
}
"""Each count that judges a run, and how a sentence names one occurrence of it."""
assert set(ANOMALIES) == set(BAD_WHEN_NONZERO + INCONCLUSIVE_WHEN_NONZERO)

EXPOSURE = "overlapping_ids"
"""The count that says a run could have shown a race (stated as a share of runs too)."""

_OTHER_PATHS: tuple[tuple[str, ...], ...] = (
    ("throughput", "messages_per_s"),
    ("throughput", "duration_s"),
    ("queue_after", "visible"),
    ("queue_after", "in_flight"),
    ("queue_after", "dlq"),
    ("table_after", "items"),
    ("cost", "per_million_usd"),
)


def _number(node: Any) -> float | None:
    if isinstance(node, bool) or not isinstance(node, int | float):
        return None
    return node


def _at(run: Mapping[str, Any], path: Sequence[str]) -> float | None:
    node: Any = run
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return _number(node)


def spread(values: Sequence[float]) -> dict[str, float | int]:
    """``{"min", "median", "max", "runs_with", "share", "share_lower", "share_upper"}`` of
    one figure across runs: ``runs_with`` counts the runs where it was above zero."""
    with_it = sum(1 for v in values if v > 0)
    lower, upper = clopper_pearson(with_it, len(values))
    return {
        "min": min(values),
        "median": median(values),
        "max": max(values),
        "runs_with": with_it,
        "share": with_it / len(values),
        "share_lower": lower,
        "share_upper": upper,
    }


def _paths(runs: Iterable[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = [("counts", name) for name in COUNT_NAMES]
    latencies: dict[str, None] = {}
    for run in runs:
        latencies.update(dict.fromkeys(run.get("latency_us") or {}))
    paths += [("latency_us", name, stat) for name in latencies for stat in LATENCY_STATS]
    return paths + list(_OTHER_PATHS)


def _put(tree: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def variant_statistics(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One variant's repeat statistics (see the module docstring)."""
    stats: dict[str, Any] = {
        "runs": len(runs),
        "seeds": [run.get("seed") for run in runs],
        "verdicts": dict(Counter(str(run.get("verdict")) for run in runs)),
    }
    for path in _paths(runs):
        values = [v for v in (_at(run, path) for run in runs) if v is not None]
        if values:
            _put(stats, path, spread(values))
    anomalies = []
    for name, what in ANOMALIES.items():
        measured = [_at(run, ("counts", name)) for run in runs]
        if name in OPTIONAL_COUNT_NAMES and all(v is None for v in measured):
            continue  # runs without sinks or effects (or side items): not a count they have
        values = [v or 0 for v in measured]
        anomalies.append(_share(name, what, sum(1 for v in values if v > 0), len(runs)))
    stats["anomalies"] = anomalies
    exposed = sum(1 for run in runs if (_at(run, ("counts", EXPOSURE)) or 0) > 0)
    stats["exposure"] = _share(
        EXPOSURE, "two deliveries of one id processed at the same time", exposed, len(runs)
    )
    return stats


def _share(name: str, what: str, k: int, n: int) -> dict[str, Any]:
    lower, upper = clopper_pearson(k, n)
    return {
        "count": name,
        "runs_with": k,
        "runs": n,
        "lower": lower,
        "upper": upper,
        "confidence": CONFIDENCE,
        "sentence": share_sentence(k, n, what),
    }


def repeat_summary(
    runs: Sequence[Mapping[str, Any]], seeds: Sequence[int], thresholds: Iterable[Threshold] = ()
) -> dict[str, Any]:
    """The report's ``repeat`` object over its runs (each carrying its ``seed``)."""
    by_variant: dict[str, list[Mapping[str, Any]]] = {}
    for run in runs:
        by_variant.setdefault(str(run.get("variant")), []).append(run)
    variants = {name: variant_statistics(group) for name, group in by_variant.items()}
    results = [
        {"variant": name, **evaluate_aggregate(threshold, stats)}
        for threshold in thresholds
        if threshold.aggregate is not None
        for name, stats in variants.items()
        if threshold.applies_to(name)
    ]
    return {
        "runs": len(seeds),
        "seeds": list(seeds),
        "aggregates": list(AGGREGATES),
        "variants": variants,
        "thresholds": results,
    }


def repeat_failed(report: Mapping[str, Any]) -> bool:
    """Whether a threshold on the repeat's statistics failed."""
    repeat = report.get("repeat") or {}
    return any(not result.get("ok", False) for result in repeat.get("thresholds", []))
