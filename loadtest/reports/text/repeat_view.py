"""How a repeated run (``--repeat N``) is shown: the spread table and the share sentences.

Owns the terminal and Markdown views of a report's ``repeat`` object
(``loadtest.model.search.repeats``): per variant, each headline figure as
min / median / max across the runs, the sentence stating each anomaly's share
of runs with its 95% interval, whether deliveries overlapped, and the results
of thresholds on the repeat's statistics. Renders from the report model only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.table import Table
from rich.text import Text

from loadtest.model.figures.metrics import format_us
from loadtest.reports.model import ReportModel

_COUNTS = (
    ("deliveries", "deliveries"),
    ("redeliveries", "redeliveries"),
    ("overlapping ids", "overlapping_ids"),
    ("duplicate writes", "duplicate_writes"),
    ("conflicting writes", "conflicting_writes"),
    ("lost outcomes", "lost_outcomes"),
    ("unexpected dead letters", "unexpected_dead_letters"),
    ("unsettled", "unsettled"),
)
_EFFECT_COUNTS = (
    ("duplicate effects", "duplicate_effects"),
    ("conflicting effects", "conflicting_effects"),
    ("lost effects", "lost_effects"),
)
"""Rows for variants whose runs have sinks or effects."""
_LATENCIES = (("end-to-end", "end_to_end"), ("handler", "handler"))
_PERCENTILES = ("p50", "p99")
_ALWAYS_STATED = ("duplicate_writes", "lost_outcomes")
"""Anomalies whose share is stated even when no run showed them (the headline claims)."""


def _spread(node: Any, show: Callable[[float], str]) -> str:
    if not isinstance(node, Mapping) or "median" not in node:
        return "–"
    return f"{show(node['min'])} / {show(node['median'])} / {show(node['max'])}"


def _plain(value: float) -> str:
    return f"{value:g}"


Read = Callable[[Mapping[str, Any]], str]


def _count(name: str) -> Read:
    return lambda stats: _spread(stats.get("counts", {}).get(name), _plain)


def _latency(name: str, stat: str) -> Read:
    return lambda stats: _spread(stats.get("latency_us", {}).get(name, {}).get(stat), format_us)


def _verdicts(stats: Mapping[str, Any]) -> str:
    return ", ".join(f"{n} {v}" for v, n in sorted(stats.get("verdicts", {}).items()))


def _rate(stats: Mapping[str, Any]) -> str:
    return _spread(stats.get("throughput", {}).get("messages_per_s"), lambda v: f"{v:.1f}")


def _effects(variants: Mapping[str, Any]) -> bool:
    """Whether a variant's runs have sinks or effects (their counts' statistics)."""
    return any("duplicate_effects" in stats.get("counts", {}) for stats in variants.values())


def _rows(effects: bool = False) -> list[tuple[str, Read]]:
    rows: list[tuple[str, Read]] = [("verdicts", _verdicts)]
    rows += [(label, _count(name)) for label, name in _COUNTS]
    if effects:
        rows += [(label, _count(name)) for label, name in _EFFECT_COUNTS]
    rows += [
        (f"{label} {stat}", _latency(name, stat))
        for label, name in _LATENCIES
        for stat in _PERCENTILES
    ]
    rows.append(("msg/s", _rate))
    return rows


def repeat_table(report: ReportModel) -> Table:
    """Per variant, min / median / max of each headline figure across the runs."""
    repeat = report.repeat or {}
    variants: Mapping[str, Any] = repeat["variants"]
    table = Table(
        title=f"{report.name} · {repeat['runs']} runs, seeds "
        f"{repeat['seeds'][0]}..{repeat['seeds'][-1]} · min / median / max",
        title_justify="left",
    )
    table.add_column("", style="bold")
    for name in variants:
        table.add_column(name, justify="right")
    for label, read in _rows(_effects(variants)):
        table.add_row(label, *(read(stats) for stats in variants.values()))
    return table


def share_sentences(report: ReportModel) -> list[tuple[str, str, bool]]:
    """``(variant, sentence, bad)`` for each anomaly worth stating and each variant's exposure."""
    out = []
    for name, stats in (report.repeat or {})["variants"].items():
        for anomaly in stats.get("anomalies", []):
            if anomaly["runs_with"] or anomaly["count"] in _ALWAYS_STATED:
                out.append((name, anomaly["sentence"], anomaly["runs_with"] > 0))
        exposure = stats.get("exposure")
        if exposure:
            out.append((name, exposure["sentence"], exposure["runs_with"] < exposure["runs"]))
    return out


def repeat_lines(report: ReportModel) -> list[Text]:
    """The share sentences and the repeat thresholds, for the terminal."""
    lines = [
        Text(f"{'!' if bad else '·'} {name}: {sentence}", style="yellow" if bad else "")
        for name, sentence, bad in share_sentences(report)
    ]
    for result in (report.repeat or {}).get("thresholds", []):
        mark, style = ("✓", "green") if result["ok"] else ("✗", "red")
        lines.append(
            Text(f"{mark} {_scoped(result)} over the runs (observed {result['observed']!s})", style)
        )
    return lines


def _scoped(result: Mapping[str, Any]) -> str:
    """The threshold with its variant in front, once."""
    expr, variant = str(result["expr"]), str(result["variant"])
    return expr if expr.startswith(f"{variant}:") else f"{variant}: {expr}"


def repeat_markdown(report: ReportModel) -> list[str]:
    """The repeat's section of the Markdown summary (empty for a single run)."""
    repeat = report.repeat
    if not repeat:
        return []
    variants = repeat["variants"]
    lines = [
        "",
        f"### {repeat['runs']} runs (seeds {repeat['seeds'][0]}..{repeat['seeds'][-1]}): "
        "min / median / max",
        "",
        "| | " + " | ".join(f"`{name}`" for name in variants) + " |",
        "|---|" + "---:|" * len(variants),
    ]
    for label, read in _rows(_effects(variants)):
        lines.append(f"| {label} | " + " | ".join(read(s) for s in variants.values()) + " |")
    lines += ["", *(f"- `{name}`: {sentence}" for name, sentence, _ in share_sentences(report))]
    for result in repeat.get("thresholds", []):
        mark = "✅" if result["ok"] else "❌"
        lines.append(
            f"- {mark} `{_scoped(result)}` over the runs (observed {result['observed']!s})"
        )
    return lines


def repeat_context(report: ReportModel) -> dict[str, Any] | None:
    """The HTML page's repeat section (None for a single run): title, table and sentences."""
    repeat = report.repeat
    if not repeat or len(report.runs) < 2:
        return None
    variants = repeat["variants"]
    return {
        "title": f"{repeat['runs']} runs, seeds {repeat['seeds'][0]}..{repeat['seeds'][-1]}",
        "variants": list(variants),
        "rows": [
            {"label": label, "cells": [read(stats) for stats in variants.values()]}
            for label, read in _rows(_effects(variants))
        ],
        "sentences": [
            {"variant": name, "sentence": sentence, "bad": bad}
            for name, sentence, bad in share_sentences(report)
        ],
        "thresholds": [
            {"expr": _scoped(r), "observed": r["observed"], "ok": r["ok"]}
            for r in repeat.get("thresholds", [])
        ],
    }
