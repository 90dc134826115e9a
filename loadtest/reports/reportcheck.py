"""Is a JSON document a complete loadtest report? Names every missing key.

Pure. ``loadtest report`` and ``loadtest diff`` read files a user points them
at; a document with the right ``schema_version`` but missing keys must be
refused naming what is missing (exit 2), never crash with a KeyError or,
worse, compare nothing and say "No regression.".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REQUIRED_TOP = ("seed", "scenario", "backend", "runs")
REQUIRED_RUN = (
    "variant",
    "handler",
    "settings",
    "counts",
    "queue_after",
    "table_after",
    "latency_us",
    "throughput",
    "thresholds",
    "verdict",
)
REQUIRED_COUNTS = (
    "messages_sent",
    "distinct_ids",
    "deliveries",
    "redeliveries",
    "writes_accepted",
    "writes_rejected",
    "duplicate_writes",
    "conflicting_writes",
    "lost_outcomes",
    "acked",
    "dead_lettered",
    "handler_errors",
    "unsettled",
)
"""The counts every renderer and the regression check read (the report's vocabulary)."""


def missing_keys(report: Mapping[str, Any]) -> list[str]:
    """The keys a complete report has and this one lacks, as paths (``runs[0].counts.acked``)."""
    missing = [key for key in REQUIRED_TOP if key not in report]
    if not isinstance(report.get("scenario", {}), Mapping) or "name" not in report.get(
        "scenario", {}
    ):
        missing.append("scenario.name")
    runs = report.get("runs", [])
    if not isinstance(runs, list) or ("runs" in report and not runs):
        return [*missing, "runs (a non-empty list)"]
    for index, run in enumerate(runs):
        where = f"runs[{index}]"
        if not isinstance(run, Mapping):
            missing.append(f"{where} (an object)")
            continue
        missing.extend(f"{where}.{key}" for key in REQUIRED_RUN if key not in run)
        counts = run.get("counts")
        if isinstance(counts, Mapping):
            missing.extend(f"{where}.counts.{key}" for key in REQUIRED_COUNTS if key not in counts)
        elif "counts" in run:
            missing.append(f"{where}.counts (an object)")
    return missing
