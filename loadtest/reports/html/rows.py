"""The HTML page's summary table rows and latency plots: which counts it shows, and how.

Owns the order of the counts in the summary table (``COUNT_ORDER``), which are flagged, which
are read from wall-clock times (``TIMED_COUNTS``: left out of an explored schedule's page), the
latency rows with the best value marked, the percentile plots, and the effect calls of
each effect witness beside the write decisions of their deliveries (``witness_effect_calls``).
Pure, like the page.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from loadtest.model import checker
from loadtest.model.figures.metrics import PERCENTILES, format_us, percentile_label
from loadtest.reports.html.charts import PALETTE, Series, percentile_curve, svg_percentile_plot
from loadtest.reports.model import RunModel

COUNT_ORDER = (
    "messages_sent",
    "distinct_ids",
    "deliveries",
    "redeliveries",
    "overlapping_ids",
    "overlapping_deliveries",
    "writes_attempted",
    "writes_accepted",
    "writes_rejected",
    "side_writes",
    "noop_writes",
    "duplicate_writes",
    "conflicting_writes",
    "lost_outcomes",
    "acked",
    "dead_lettered",
    "unexpected_dead_letters",
    "handler_errors",
    "unobserved_calls",
)


BAD_WHEN_NONZERO = checker.FLAGGED_WHEN_NONZERO


WARN_WHEN_NONZERO = frozenset(checker.NOTEWORTHY_WHEN_NONZERO)


PERCENTILE_KEYS = (*((key, percentile_label(key)) for key, _ in PERCENTILES), ("max", "max"))


TIMED_COUNTS = frozenset({"overlapping_ids", "overlapping_deliveries"})
"""Counts read from wall-clock times: an explored schedule's times are the explorer's steps."""


def count_cells(runs: Sequence[RunModel], *, explored: bool = False) -> list[dict[str, Any]]:
    names = [n for n in COUNT_ORDER if not (explored and n in TIMED_COUNTS)]
    for run in runs:
        for key in run.counts:
            if key not in names and not (explored and key in TIMED_COUNTS):
                names.append(key)
    rows = []
    for name in names:
        cells = []
        for run in runs:
            value = run.counts.get(name)
            level = ""
            if isinstance(value, int) and value > 0:
                level = (
                    "bad"
                    if name in BAD_WHEN_NONZERO
                    else "warn"
                    if name in WARN_WHEN_NONZERO
                    else ""
                )
            cells.append({"text": "–" if value is None else f"{value:,}", "level": level})
        if (
            name not in COUNT_ORDER
            and name not in checker.OPTIONAL_COUNT_NAMES
            and not any(c["level"] for c in cells)
        ):
            continue  # counts beyond COUNT_ORDER only when they have something to say
        rows.append({"name": name, "cells": cells, "flag": any(c["level"] == "bad" for c in cells)})
    return rows


def latency_rows(runs: Sequence[RunModel], names: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        for key, label in PERCENTILE_KEYS:
            values = [(run.latency_us.get(name) or {}).get(key) for run in runs]
            present = [v for v in values if isinstance(v, int | float)]
            best = min(present) if len(present) > 1 else None
            cells = [
                {"text": "–" if v is None else format_us(v), "best": v is not None and v == best}
                for v in values
            ]
            rows.append({"name": name, "stat": label, "cells": cells})
    return rows


def latency_names(runs: Sequence[RunModel]) -> list[str]:
    names: list[str] = []
    for run in runs:
        for key in [*run.latency_hdr, *run.latency_us]:
            if key not in names:
                names.append(key)
    if "end_to_end" in names:
        names.remove("end_to_end")
        names.insert(0, "end_to_end")
    return names


def percentile_plots(
    runs: Sequence[RunModel], labels: Sequence[str], names: Sequence[str]
) -> list[Markup]:
    plots = []
    for index, name in enumerate(names):
        series = []
        for i, (run, label) in enumerate(zip(runs, labels, strict=True)):
            encoded = run.latency_hdr.get(name)
            points = percentile_curve(encoded) if encoded else []
            summary = run.latency_us.get(name) or {}
            markers = []
            for key, p in PERCENTILES:
                text = percentile_label(key)
                x = math.log10(1 / (1 - p / 100))
                if points and summary.get(key) is not None and x <= points[-1][0] + 1e-9:
                    markers.append((x, float(summary[key]), text))
            note = f"p99 {format_us(summary['p99'])}" if summary.get("p99") is not None else ""
            series.append(Series(label, PALETTE[i % len(PALETTE)], points, note, markers))
        title = f"{name} latency by percentile"
        if index == 0:
            plots.append(svg_percentile_plot(series, title=title, plot_id=f"plot-{name}"))
        else:
            plots.append(
                svg_percentile_plot(
                    series, title=title, width=510, height=280, plot_id=f"plot-{name}"
                )
            )
    return plots


EFFECT_COLUMNS = ("sent", "delivered", "duplicate", "conflicting", "lost", "deduplicated")
"""The figures of a sink's row in the page's effects table, in order."""
_FAILING_COLUMNS = frozenset({"duplicate", "conflicting", "lost"})


def effect_rows(runs: Sequence[RunModel], labels: Sequence[str]) -> list[dict[str, Any]]:
    """One row per run and sink (none for runs without sinks or effects): its figures, the
    failing ones marked (a duplicate on an at-least-once sink is reported, not marked), and
    its witnesses in words."""
    rows = []
    for run, label in zip(runs, labels, strict=True):
        for entry in run.effects or ():
            tolerant = entry.get("delivery") == "at-least-once"
            cells = []
            for name in EFFECT_COLUMNS:
                value = int(entry.get(name) or 0)
                failing = name in _FAILING_COLUMNS and not (tolerant and name == "duplicate")
                cells.append({"text": f"{value:,}", "level": "bad" if value and failing else ""})
            rows.append(
                {
                    "run": label,
                    "sink": entry.get("sink", ""),
                    "kind": entry.get("kind", ""),
                    "address": entry.get("address", ""),
                    "cells": cells,
                    "delivery": entry.get("delivery", ""),
                    "required": entry.get("required", ""),
                    "deduplicated_by": entry.get("deduplicated_by", ""),
                    "witnesses": [
                        {
                            "text": w.get("text", ""),
                            "deliveries": ", ".join(
                                f"{d.get('request_id')} ({d.get('outcome')})"
                                for d in w.get("deliveries", ())
                            ),
                        }
                        for w in entry.get("witnesses", ())
                    ],
                    "flag": any(c["level"] == "bad" for c in cells),
                }
            )
    return rows


def witness_effect_calls(run: RunModel) -> list[dict[str, Any]]:
    """The effect calls behind each witness of a duplicate, conflicting or lost effect
    (``effects`` -> ``witnesses`` -> ``deliveries``), one row per delivery: the sink, the
    operation and whether the sink accepted it, the delivery (request, message, receive
    count, how it ended) and the numbers of its write decisions for the same business id in
    the write decisions table. A duplicate's or conflict's deliveries are the ones whose send
    the sink accepted; a lost effect's are the message's deliveries, none of which sent it.
    Empty for a run without effects."""
    writes: dict[tuple[str, str], list[int]] = {}
    for index, w in enumerate(run.write_decisions):
        key = (str(w.get("request_id", "")), str(w.get("business_id", "")))
        writes.setdefault(key, []).append(index + 1)
    rows = []
    for entry in run.effects or ():
        for w in entry.get("witnesses", ()):
            business_id = str(w.get("business_id", ""))
            for d in w.get("deliveries", ()):
                operation = str(d.get("operation") or "")
                request_id = str(d.get("request_id", ""))
                numbers = writes.get((request_id, business_id), [])
                rows.append(
                    {
                        "anomaly": str(w.get("anomaly", "")),
                        "business_id": business_id,
                        "sink": str(entry.get("sink", "")),
                        "kind": str(entry.get("kind", "")),
                        "address": str(entry.get("address", "")),
                        "operation": operation or "—",
                        "accepted": "accepted" if operation else "none sent",
                        "request_id": request_id,
                        "message_id": str(d.get("message_id", "")),
                        "receive_count": d.get("receive_count", ""),
                        "outcome": str(d.get("outcome", "")),
                        "environment": d.get("environment", ""),
                        "at_ms": f"{float(d.get('at_ms') or 0):.1f}",
                        "writes": ", ".join(f"#{n}" for n in numbers) or "—",
                    }
                )
    return rows
