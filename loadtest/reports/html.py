"""The HTML report: one self-contained page rendered from the report model.

Owns ``--html`` (and ``loadtest report saved.json --html``). Pure: takes a
report model (``loadtest.reports.model``; its JSON is read into one) and returns a string; writing the file is
the CLI's job. The page needs no network — CSS and a little JS are inline and
every plot is an inline SVG drawn here in Python, so the same report always
gives the same bytes and the plots are testable without a browser.

All report-derived text (variant names, message bodies, handler errors) is
escaped: by jinja2's autoescape in the template, and by :func:`esc` in the
SVGs built here. Receipt handles are never in a report, and nothing here
adds them.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
from markupsafe import Markup

from loadtest.model import checker
from loadtest.model.metrics import PERCENTILES, format_us, percentile_label
from loadtest.reports.charts import (
    PALETTE,
    Series,
    format_item,
    percentile_curve,
    step_markers,
    step_series,
    svg_percentile_plot,
    svg_step_chart,
)
from loadtest.reports.finding import headlines, page_warnings, witness
from loadtest.reports.formats import format_observed
from loadtest.reports.heatmap import html_section
from loadtest.reports.model import ReportModel, RunModel, as_model
from loadtest.reports.repeat_view import repeat_context
from loadtest.reports.timeline import (
    explore_timeline,
    find_races,
    timeline_for,
)

__all__ = ["percentile_curve", "render_html"]

WRITE_TABLE_PAGE_ROWS = 50
"""Rows per page of the write decisions table (all rows are shown without JS)."""

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


# --------------------------------------------------------------------------- the page


def _run_labels(runs: Sequence[RunModel]) -> list[str]:
    """Variant names; a sweep's repeated names get the settings that differ between cells."""
    names = [run.variant for run in runs]
    if len(set(names)) == len(names):
        return names
    settings = [run.settings for run in runs]
    keys = sorted({k for s in settings for k in s})
    varying = [k for k in keys if len({json.dumps(s.get(k), sort_keys=True) for s in settings}) > 1]
    labels = []
    for name, s in zip(names, settings, strict=True):
        extra = ", ".join(f"{k}={s.get(k)}" for k in varying)
        labels.append(f"{name} ({extra})" if extra else name)
    seen: Counter[str] = Counter()
    unique = []
    for label in labels:
        seen[label] += 1
        unique.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return unique


def _reproduce_command(report: ReportModel) -> tuple[str, bool]:
    # An exploration's page shows one schedule: its replay line reruns exactly that one,
    # as the terminal's "replay:" does (the command reruns the whole search).
    replay = (report.explore or {}).get("replay")
    if replay:
        return str(replay), False
    command = report.command
    if command:
        return str(command), False
    name = report.scenario.get("name") or "SCENARIO"
    variants = list(dict.fromkeys(run.variant for run in report.runs))
    seed = report.seed
    if len(variants) > 1:
        return f"loadtest compare {name} --variants {','.join(variants)} --seed {seed}", True
    variant = f" --variant {variants[0]}" if variants else ""
    return f"loadtest run {name}{variant} --seed {seed}", True


def _count_cells(runs: Sequence[RunModel]) -> list[dict[str, Any]]:
    names = list(COUNT_ORDER)
    for run in runs:
        for key in run.counts:
            if key not in names:
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
        if name not in COUNT_ORDER and not any(c["level"] for c in cells):
            continue  # counts beyond COUNT_ORDER only when they have something to say
        rows.append({"name": name, "cells": cells, "flag": any(c["level"] == "bad" for c in cells)})
    return rows


def _latency_rows(runs: Sequence[RunModel], names: Sequence[str]) -> list[dict[str, Any]]:
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


def _latency_names(runs: Sequence[RunModel]) -> list[str]:
    names: list[str] = []
    for run in runs:
        for key in [*run.latency_hdr, *run.latency_us]:
            if key not in names:
                names.append(key)
    if "end_to_end" in names:
        names.remove("end_to_end")
        names.insert(0, "end_to_end")
    return names


def _percentile_plots(
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


def _write_rows(run: RunModel) -> list[dict[str, Any]]:
    rows = []
    for index, w in enumerate(run.write_decisions):
        outcome = str(w.get("outcome"))
        bid = str(w.get("business_id"))
        role = str(w.get("role", ""))
        css = "again" if role == "again" else outcome
        rows.append(
            {
                "n": index + 1,
                "at_ms": f"{float(w.get('at_ms') or 0):.1f}",
                "business_id": bid,
                "environment": w.get("environment"),
                "operation": w.get("operation"),
                "condition": w.get("condition") or "—",
                "outcome": outcome + (f" ({role})" if role and role not in (outcome, "") else ""),
                "error_code": w.get("error_code") or "",
                "css": css,
                "before": format_item(w.get("item_before"))
                + ("" if w.get("before_known", True) else " (not observed)"),
                "after": format_item(w.get("item_after")),
            }
        )
    return rows


def _cuts(report: ReportModel, labels: Sequence[str]) -> list[str]:
    """What the page lists only in part (the counts are always over everything): stated apart
    from the warnings, which are about the consumer and the run, not the report's size."""
    out = []
    for run, label in zip(report.runs, labels, strict=True):
        total = run.known("write_decisions_total")
        shown = len(run.write_decisions)
        if isinstance(total, int) and total > shown:
            out.append(f"{label}: write decisions listed for the first {shown} of {total} writes")
        for name, cut in run.cut.items():
            if name != "write_decisions" and isinstance(cut, dict) and cut.get("cut"):
                out.append(f"{label}: {name} listed for {cut['listed']} of {cut['total']}")
    return out


def _thresholds(run: RunModel) -> list[dict[str, Any]]:
    results = sorted(run.thresholds, key=lambda r: r.ok)  # failing first
    return [{"expr": r.expr, "observed": format_observed(r, run), "ok": r.ok} for r in results]


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("loadtest.reports", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["us"] = format_us
    env.filters["item"] = format_item
    return env


def render_html(report: ReportModel | Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page (no network needed to view it).

    Deterministic: the same report gives the same string. ``report`` is the
    report model, as built by ``loadtest.reports.report.build`` or read back
    from a saved file (a JSON report is read into one).
    """
    report = as_model(report)
    runs = report.runs
    labels = _run_labels(runs)
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(runs))]
    latency_names = _latency_names(runs)
    command, reconstructed = _reproduce_command(report)

    race_ids, raced = find_races(runs)
    races = []
    for business_id in race_ids:
        timelines = []
        missing = []
        for run, label in zip(runs, labels, strict=True):
            timeline = timeline_for(run, label, business_id)
            if timeline is None:
                missing.append(label)
            else:
                timelines.append(timeline)
        races.append({"business_id": business_id, "timelines": timelines, "missing": missing})
    other_findings = []
    for run, label in zip(runs, labels, strict=True):
        for f in run.findings:
            if str(f.get("business_id")) in race_ids:
                continue
            envs = sorted({str(w.get("environment")) for w in f.get("writes") or []})
            other_findings.append(
                {
                    "run": label,
                    "business_id": f.get("business_id"),
                    "accepted": f.get("accepted_writes"),
                    "environments": ", ".join(envs),
                    "reads_absent": sum(1 for r in f.get("reads") or [] if r.get("found") is None),
                }
            )

    over_time = [
        svg_step_chart(
            [
                Series(label, color, pts, markers=step_markers(pts, "msg/s"))
                for run, label, color in zip(runs, labels, colors, strict=True)
                for pts in [step_series(run, "acked", per_s=True)]
            ],
            title="Throughput: messages acknowledged per second",
            y_label="messages/s",
        ),
        svg_step_chart(
            [
                Series(label, color, pts, markers=step_markers(pts, "duplicate writes"))
                for run, label, color in zip(runs, labels, colors, strict=True)
                for pts in [step_series(run, "duplicate_writes", per_s=False)]
            ],
            title="Duplicate writes per interval",
            y_label="duplicate writes",
        ),
    ]

    run_views = []
    for run, label, color in zip(runs, labels, colors, strict=True):
        rows = _write_rows(run)
        errors_by_text: dict[tuple[str, str], int] = defaultdict(int)
        for e in run.errors:
            errors_by_text[(str(e.get("outcome", "")), str(e.get("error", "")))] += int(
                e.get("count") or 1
            )
        run_views.append(
            {
                "run": run,
                "label": label,
                "color": color,
                "known": {k: run.known(k, "–") for k in ("cold_starts", "handler", "faults")},
                "verdict": run.verdict,
                "reasons": [
                    *run.reasons,
                    *(f"inconclusive: {r}" for r in run.inconclusive),
                    *run.notes,
                ],
                "relaxed": list(run.relaxed_reasons or ()),
                "thresholds": _thresholds(run),
                "write_rows": rows,
                "write_total": run.known("write_decisions_total", len(rows)),
                "write_outcomes": run.write_outcomes,
                "errors": [
                    {"outcome": o, "error": e, "count": n}
                    for (o, e), n in sorted(errors_by_text.items(), key=lambda kv: (-kv[1], kv[0]))
                ],
                "dead_letters": list(run.dead_letters),
                "settings": run.settings,
                "throughput": run.throughput,
                "queue_after": run.queue_after,
                "table_after": run.table_after,
            }
        )

    warnings, notes = page_warnings(runs, labels)
    repeat = repeat_context(report)
    # A sweep's grid and a repeat's table tell their own story, one cell or run per row.
    many = repeat is not None or any(run.cell for run in runs)
    example = (report.explore or {}).get("counterexample") or {}
    template = _environment().get_template("report.html.j2")
    return template.render(
        repeat=repeat,
        report=report,
        scenario=report.scenario,
        backend=report.backend,
        runs=run_views,
        command=command,
        command_reconstructed=reconstructed,
        warnings=warnings,
        notes=notes,
        headlines=[
            {"line": line, "run": view, "witness": witness(run, race_ids if raced else [])}
            for line, view, run in zip(headlines(runs, labels), run_views, runs, strict=True)
        ]
        if not many
        else [],
        cuts=_cuts(report, labels),
        count_rows=_count_cells(runs),
        latency_rows=_latency_rows(runs, latency_names),
        latency_plots=_percentile_plots(runs, labels, latency_names),
        over_time=over_time,
        races=races,
        raced=raced,
        other_findings=other_findings,
        page_rows=WRITE_TABLE_PAGE_ROWS,
        sweep=html_section(report, report.extra.get("sweep_metric")),
        explore_timeline=explore_timeline(example.get("steps") or []),
    )
