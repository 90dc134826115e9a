"""The HTML report: one self-contained page rendered from a JSON report dict.

Owns ``--html`` (and ``loadtest report saved.json --html``). Pure: takes a
report dict (``schema_version`` 1) and returns a string; writing the file is
the CLI's job. The page needs no network — CSS and a little JS are inline and
every plot is an inline SVG drawn here in Python, so the same report always
gives the same bytes and the plots are testable without a browser.

All report-derived text (variant names, message bodies, handler errors) is
escaped: by jinja2's autoescape in the template, and by :func:`_esc` in the
SVGs built here. Receipt handles are never in a report, and nothing here
adds them.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

import jinja2
from markupsafe import Markup

from loadtest import checker
from loadtest.formats import format_observed, format_us
from loadtest.heatmap import html_section

__all__ = ["percentile_curve", "render_html"]

PALETTE = ("#2563eb", "#ea580c", "#7c3aed", "#0891b2", "#db2777", "#854d0e", "#4b5563", "#65a30d")
"""Line colours, one per run in report order (cycled past eight); no red or green,
which the page keeps for fail and pass."""

MAX_PERCENTILE_X = 4.0
"""The percentile plot's right edge as log10(1/(1-p)): 4 is 99.99%."""

CURVE_POINTS = 200
"""Samples per percentile curve, evenly spaced on the log percentile axis."""

RACE_IDS_SHOWN = 2
"""Double-written business ids whose timeline is drawn."""

WRITE_TABLE_PAGE_ROWS = 50
"""Rows per page of the write decisions table (all rows are shown without JS)."""

COUNT_ORDER = (
    "messages_sent",
    "distinct_ids",
    "deliveries",
    "redeliveries",
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
BAD_WHEN_NONZERO = frozenset(checker.BAD_WHEN_NONZERO + checker.INCONCLUSIVE_WHEN_NONZERO)
WARN_WHEN_NONZERO = frozenset(checker.NOTEWORTHY_WHEN_NONZERO)
PERCENTILE_KEYS = (
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p99_9", "p99.9"),
    ("max", "max"),
)


def _esc(value: object) -> str:
    return escape(str(value), quote=True)


def _path_d(points: Iterable[tuple[float, float]]) -> str:
    """An SVG path's ``d`` through points already in plot coordinates."""
    return " ".join(
        f"{'M' if i == 0 else 'L'}{_num(x)},{_num(y)}" for i, (x, y) in enumerate(points)
    )


def _num(value: float) -> str:
    """A coordinate for SVG: short and deterministic."""
    text = f"{value:.1f}"
    return "0" if text == "-0.0" else text


# --------------------------------------------------------------------------- values


def format_value(attr: Any) -> str:
    """One DynamoDB attribute value (``{"S": "x"}``, ``{"N": "6"}``, ...) as plain text."""
    if isinstance(attr, Mapping) and len(attr) == 1:
        ((kind, value),) = attr.items()
        if kind in ("S", "N"):
            return str(value)
        if kind == "BOOL":
            return "true" if value else "false"
        if kind == "NULL":
            return "null"
        if kind == "L" and isinstance(value, list):
            return "[" + ", ".join(format_value(v) for v in value) + "]"
        if kind == "M" and isinstance(value, Mapping):
            return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(attr, sort_keys=True)


def format_item(item: Any, *, skip: str | None = None) -> str:
    """An item as ``name=value`` pairs; ``skip`` drops attributes equal to it (the key)."""
    if item is None:
        return "∅"
    if not isinstance(item, Mapping):
        return str(item)
    parts = [
        f"{name}={format_value(value)}"
        for name, value in item.items()
        if skip is None or format_value(value) != skip
    ]
    return " ".join(parts) if parts else "(key only)"


def _short(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- axes


def nice_ticks(low: float, high: float, target: int = 6) -> list[float]:
    """Round tick values (1-2-5 steps) covering ``low``..``high``."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(target, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _tick_label(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:g}"


def _percentile_label(x: float) -> str:
    if x == 0:
        return "0%"
    p = 100 * (1 - 10**-x)
    return f"{p:.{max(0, int(x) - 2)}f}%"


# --------------------------------------------------------------------------- percentile plot


def percentile_curve(encoded: str) -> list[tuple[float, float]]:
    """(log10(1/(1-p)), latency in µs) points of an encoded HdrHistogram.

    Sampled evenly on the log percentile axis from 0% up to where the data
    ends (1/(1-p) = count, capped at 99.99%), then the maximum: the curve
    HdrHistogram's plotter draws from an ``.hgrm`` file.
    """
    from hdrh.histogram import HdrHistogram

    histogram = HdrHistogram.decode(encoded)
    count = int(histogram.get_total_count())
    if count == 0:
        return []
    x_end = min(MAX_PERCENTILE_X, max(math.log10(count), 1.0))
    xs = [x_end * i / CURVE_POINTS for i in range(CURVE_POINTS + 1)]
    percentiles = [100 * (1 - 10**-x) for x in xs]
    # One pass over the counts for all percentiles (get_value_at_percentile is a pass each).
    values = histogram.get_percentile_to_value_dict(percentiles)
    points = [(x, float(values[p])) for x, p in zip(xs, percentiles, strict=True)]
    points.append((x_end, float(histogram.get_max_value())))
    return points


@dataclass(frozen=True)
class Series:
    """One line of a plot: a run's label, colour and (x, y) points."""

    label: str
    color: str
    points: list[tuple[float, float]]
    note: str = ""
    markers: list[tuple[float, float, str]] = field(default_factory=list)


def svg_percentile_plot(
    series: Sequence[Series], *, title: str, width: int = 1040, height: int = 380, plot_id: str = ""
) -> Markup:
    """Latency (ms, linear) against percentile (log ``1/(1-p)`` axis, 0%..99.99%)."""
    left, right, top, bottom = 64, 30, 30, 46
    pw, ph = width - left - right, height - top - bottom
    y_max_ms = max((y / 1000 for s in series for _, y in s.points), default=1.0) or 1.0
    y_ticks = nice_ticks(0, y_max_ms * 1.05)
    y_top = y_ticks[-1]

    def sx(x: float) -> float:
        return left + pw * x / MAX_PERCENTILE_X

    def sy(ms: float) -> float:
        return top + ph - ph * ms / y_top

    out = [
        f'<svg class="plot percentile-plot" id="{_esc(plot_id)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{_esc(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<text class="plot-title" x="{left}" y="18">{_esc(title)}</text>',
    ]
    for tick in y_ticks:
        y = sy(tick)
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{_num(y)}" y2="{_num(y)}"/>'
        )
        out.append(
            f'<text class="tick" x="{left - 6}" y="{_num(y + 4)}" text-anchor="end">'
            f"{_tick_label(tick)}</text>"
        )
    for decade in range(int(MAX_PERCENTILE_X)):
        for sub in range(2, 10):  # minor lines at 1/(1-p) = 2..9 × 10^decade
            x = sx(decade + math.log10(sub))
            out.append(
                f'<line class="grid minor" x1="{_num(x)}" x2="{_num(x)}" y1="{top}" y2="{top + ph}"/>'
            )
    for decade in range(int(MAX_PERCENTILE_X) + 1):
        x = sx(decade)
        out.append(
            f'<line class="grid major" x1="{_num(x)}" x2="{_num(x)}" y1="{top}" y2="{top + ph}"/>'
        )
        out.append(
            f'<text class="tick" x="{_num(x)}" y="{top + ph + 16}" text-anchor="middle">'
            f"{_percentile_label(decade)}</text>"
        )
    out.append(f'<rect class="frame" x="{left}" y="{top}" width="{pw}" height="{ph}"/>')
    out.append(
        f'<text class="axis-label" x="{left + pw / 2}" y="{height - 6}" text-anchor="middle">'
        "percentile</text>"
    )
    out.append(
        f'<text class="axis-label" transform="translate(14 {top + ph / 2}) rotate(-90)" '
        'text-anchor="middle">latency (ms)</text>'
    )
    for s in series:
        if not s.points:
            continue
        d = _path_d((sx(x), sy(y / 1000)) for x, y in s.points)
        out.append(
            f'<path class="series" data-variant="{_esc(s.label)}" d="{d}" fill="none" '
            f'stroke="{s.color}" stroke-width="2.2" stroke-linejoin="round"/>'
        )
        for x, y, label in s.markers:
            out.append(
                f'<circle class="marker" data-variant="{_esc(s.label)}" cx="{_num(sx(x))}" '
                f'cy="{_num(sy(y / 1000))}" r="3.5" fill="{s.color}">'
                f"<title>{_esc(s.label)} {_esc(label)}: {_esc(format_us(y))}</title></circle>"
            )
    # Legend, top-left inside the frame (latency curves rise to the right).
    lx, ly = left + 12, top + 14
    for i, s in enumerate(series):
        y = ly + i * 18
        text = f"{s.label}{' — ' + s.note if s.note else ''}"
        out.append(
            f'<g class="legend-item" data-variant="{_esc(s.label)}" tabindex="0">'
            f'<rect x="{lx - 4}" y="{y - 11}" width="{min(pw - 20, 14 + 7 * len(text))}" height="16" '
            'class="legend-bg"/>'
            f'<line x1="{lx}" x2="{lx + 18}" y1="{y - 3}" y2="{y - 3}" stroke="{s.color}" stroke-width="3"/>'
            f'<text class="legend" x="{lx + 24}" y="{y + 1}">{_esc(text)}</text></g>'
        )
    out.append("</svg>")
    return Markup("".join(out))


# --------------------------------------------------------------------------- over time


def svg_step_chart(
    series: Sequence[Series], *, title: str, y_label: str, width: int = 520, height: int = 240
) -> Markup:
    """Per-interval values as steps: each interval is a flat segment over its seconds."""
    left, right, top, bottom = 52, 14, 30, 40
    pw, ph = width - left - right, height - top - bottom
    x_max = max((x for s in series for x, _ in s.points), default=1.0) or 1.0
    y_max = max((y for s in series for _, y in s.points), default=0.0)
    x_ticks = nice_ticks(0, x_max, 6)
    y_ticks = nice_ticks(0, y_max if y_max > 0 else 1, 4)
    x_top, y_top = x_ticks[-1], y_ticks[-1]

    def sx(x: float) -> float:
        return left + pw * x / x_top

    def sy(y: float) -> float:
        return top + ph - ph * y / y_top

    out = [
        f'<svg class="plot step-plot" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="plot-title" x="{left}" y="18">{_esc(title)}</text>',
    ]
    for tick in y_ticks:
        y = sy(tick)
        out.append(
            f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{_num(y)}" y2="{_num(y)}"/>'
        )
        out.append(
            f'<text class="tick" x="{left - 6}" y="{_num(y + 4)}" text-anchor="end">{_tick_label(tick)}</text>'
        )
    for tick in x_ticks:
        x = sx(tick)
        out.append(f'<line class="grid" x1="{_num(x)}" x2="{_num(x)}" y1="{top}" y2="{top + ph}"/>')
        out.append(
            f'<text class="tick" x="{_num(x)}" y="{top + ph + 15}" text-anchor="middle">'
            f"{_tick_label(tick)}</text>"
        )
    out.append(f'<rect class="frame" x="{left}" y="{top}" width="{pw}" height="{ph}"/>')
    out.append(
        f'<text class="axis-label" x="{left + pw / 2}" y="{height - 5}" text-anchor="middle">'
        "seconds since the run started</text>"
    )
    out.append(
        f'<text class="axis-label" transform="translate(12 {top + ph / 2}) rotate(-90)" '
        f'text-anchor="middle">{_esc(y_label)}</text>'
    )
    for s in series:
        if not s.points:
            continue
        d = _path_d((sx(x), sy(y)) for x, y in s.points)
        out.append(
            f'<path class="series" data-variant="{_esc(s.label)}" d="{d}" fill="none" '
            f'stroke="{s.color}" stroke-width="2"/>'
        )
        for x0, y, label in s.markers:
            out.append(
                f'<circle class="marker" cx="{_num(sx(x0))}" cy="{_num(sy(y))}" r="2.5" fill="{s.color}">'
                f"<title>{_esc(s.label)}: {_esc(label)}</title></circle>"
            )
    lx = left + pw - 8
    for i, s in enumerate(series):
        y = top + 14 + i * 16
        out.append(
            f'<g class="legend-item" data-variant="{_esc(s.label)}">'
            f'<line x1="{lx - 16}" x2="{lx}" y1="{y - 4}" y2="{y - 4}" stroke="{s.color}" stroke-width="3"/>'
            f'<text class="legend" x="{lx - 22}" y="{y}" text-anchor="end">{_esc(s.label)}</text></g>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def _step_series(run: Mapping[str, Any], name: str, *, per_s: bool) -> list[tuple[float, float]]:
    series = run.get("series") or {}
    values = series.get(name) or []
    interval_s = float(series.get("interval_s") or 1.0)
    duration_s = float((run.get("throughput") or {}).get("duration_s") or len(values) * interval_s)
    points: list[tuple[float, float]] = []
    for i, count in enumerate(values):
        start = i * interval_s
        # The last interval is cut short by the end of the run; a rate over it uses its real width.
        end = min((i + 1) * interval_s, max(duration_s, start + interval_s * 0.1))
        if i == len(values) - 1 and end <= start:
            end = start + interval_s
        value = count / (end - start) if per_s else float(count)
        points += [(start, value), (end, value)]
    return points


def _step_markers(points: list[tuple[float, float]], unit: str) -> list[tuple[float, float, str]]:
    markers = []
    for (x0, y), (x1, _) in zip(points[::2], points[1::2], strict=True):
        markers.append(((x0 + x1) / 2, y, f"{x0:g}–{x1:g} s: {y:.4g} {unit}"))
    return markers


# --------------------------------------------------------------------------- race timeline


@dataclass(frozen=True)
class TimelineEvent:
    """One bar of a race timeline: a read or a write by one execution environment."""

    kind: str
    """"read" or "write"."""
    environment: str
    start_ms: float
    """Offset from the start of the run (in milliseconds)."""
    end_ms: float
    css: str
    label: str
    detail: str


@dataclass(frozen=True)
class Timeline:
    """The deliveries of one business id in one run, ready to draw."""

    run_label: str
    business_id: str
    events: list[TimelineEvent]
    summary: str
    svg: Markup


def _write_events(writes: Iterable[Mapping[str, Any]], business_id: str) -> list[TimelineEvent]:
    ordered = sorted(
        writes, key=lambda w: (float(w.get("done_ms", w.get("at_ms", 0))), str(w.get("request_id")))
    )
    events = []
    for w in ordered:
        outcome = str(w.get("outcome"))
        op = str(w.get("operation"))
        role = str(w.get("role", ""))
        before = format_item(w.get("item_before"), skip=business_id)
        after = format_item(w.get("item_after"), skip=business_id)
        if outcome == "accepted" and role in ("first", "again"):
            # The checker's role: "first" found the item absent, in the backend's order.
            css = "w-again" if role == "again" else "w-accepted"
            if role == "first" or w.get("item_before") is None:
                label = f"{op} ✓ stored: ∅ → {_short(after, 40)}"
            elif before == after:
                label = f"{op} ✓ overwrote {_short(before, 40)} → same item"
            else:
                label = f"{op} ✓ overwrote {_short(before, 28)} → {_short(after, 28)}"
        elif outcome == "accepted":
            css, label = "w-accepted", f"{op} ✓ ({role or 'accepted'})"
        elif outcome == "rejected":
            css, label = "w-rejected", f"{op} ✗ rejected — kept {_short(before, 40)}"
        else:
            css, label = "w-error", f"{op} error {w.get('error_code') or ''}".strip()
        condition = w.get("condition") or "none (unconditional)"
        detail = (
            f"env {w.get('environment')} {op} {outcome}; condition: {condition}; "
            f"item before: {format_item(w.get('item_before'))}; item after: {format_item(w.get('item_after'))}; "
            f"at {float(w.get('at_ms', 0)):.1f} ms"
        )
        events.append(
            TimelineEvent(
                kind="write",
                environment=str(w.get("environment")),
                start_ms=float(w.get("at_ms", 0)),
                end_ms=float(w.get("done_ms", w.get("at_ms", 0))),
                css=css,
                label=label,
                detail=detail,
            )
        )
    return events


def _read_events(reads: Iterable[Mapping[str, Any]], business_id: str) -> list[TimelineEvent]:
    events = []
    for r in reads:
        found = r.get("found")
        saw = "absent" if found is None else format_item(found, skip=business_id)
        events.append(
            TimelineEvent(
                kind="read",
                environment=str(r.get("environment")),
                start_ms=float(r.get("at_ms", 0)),
                end_ms=float(r.get("done_ms", r.get("at_ms", 0))),
                css="read-absent" if found is None else "read-found",
                label=f"GetItem → {'absent' if found is None else 'saw ' + _short(saw, 40)}",
                detail=f"env {r.get('environment')} GetItem saw {saw}; at {float(r.get('at_ms', 0)):.1f} ms",
            )
        )
    return events


def _timeline_summary(events: Sequence[TimelineEvent], business_id: str) -> str:
    reads_absent = [e for e in events if e.css == "read-absent"]
    writes = [e for e in events if e.kind == "write"]
    accepted = [e for e in writes if e.css in ("w-accepted", "w-again")]
    again = [e for e in writes if e.css == "w-again"]
    rejected = [e for e in writes if e.css == "w-rejected"]
    parts = []
    if reads_absent:
        envs = ", ".join(dict.fromkeys(e.environment for e in reads_absent))
        parts.append(f"{len(reads_absent)} read(s) of {business_id} saw it absent (env {envs})")
    if writes:
        envs = ", ".join(dict.fromkeys(e.environment for e in writes))
        parts.append(f"{len(writes)} write(s) from env {envs}: {len(accepted)} accepted")
    if again:
        parts.append(f"{len(again)} of them wrote the outcome again (duplicate)")
    if rejected:
        parts.append(f"{len(rejected)} rejected by the condition, the stored item preserved")
    return "; ".join(parts) + "." if parts else "No reads or writes were recorded for this id."


def svg_timeline(events: Sequence[TimelineEvent], *, title: str, width: int = 1060) -> Markup:
    """One lane per execution environment; bars for reads and writes on a shared ms axis."""
    lanes = list(dict.fromkeys(e.environment for e in sorted(events, key=lambda e: e.start_ms)))
    lane_h, left, right, top, bottom = 58, 70, 20, 30, 36
    height = top + bottom + lane_h * max(len(lanes), 1)
    pw = width - left - right
    t0 = min((e.start_ms for e in events), default=0.0)
    t1 = max((e.end_ms for e in events), default=1.0)
    pad = max((t1 - t0) * 0.04, 0.5)
    ticks = nice_ticks(t0 - pad, t1 + pad, 8)
    lo, hi = ticks[0], ticks[-1]

    def sx(ms: float) -> float:
        return left + pw * (ms - lo) / (hi - lo)

    out = [
        f'<svg class="plot timeline" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{_esc(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="plot-title" x="{left}" y="18">{_esc(title)}</text>',
    ]
    for tick in ticks:
        x = sx(tick)
        out.append(
            f'<line class="grid" x1="{_num(x)}" x2="{_num(x)}" y1="{top}" y2="{height - bottom}"/>'
            f'<text class="tick" x="{_num(x)}" y="{height - bottom + 15}" text-anchor="middle">'
            f"{_tick_label(tick)}</text>"
        )
    out.append(
        f'<text class="axis-label" x="{left + pw / 2}" y="{height - 4}" text-anchor="middle">'
        "ms since the run started</text>"
    )
    for i, lane in enumerate(lanes):
        y = top + i * lane_h
        out.append(
            f'<rect class="lane{" odd" if i % 2 else ""}" x="{left}" y="{y}" width="{pw}" height="{lane_h}"/>'
            f'<text class="lane-label" x="{left - 8}" y="{y + lane_h / 2 + 4}" text-anchor="end">'
            f"env {_esc(lane)}</text>"
        )
    for e in sorted(events, key=lambda e: (e.start_ms, e.kind)):
        y = top + lanes.index(e.environment) * lane_h
        x0, x1 = sx(e.start_ms), max(sx(e.end_ms), sx(e.start_ms) + 3)
        bar_y = y + 22
        # Reads label above their bar, writes below: in one lane a read is followed by its write.
        text_y = bar_y - 5 if e.kind == "read" else bar_y + 27
        anchor, tx = "start", x0
        if x0 + 6.2 * len(e.label) > left + pw:
            anchor, tx = "end", x1
        out.append(
            f'<g class="event {e.kind} {e.css}"><title>{_esc(e.detail)}</title>'
            f'<rect class="bar" x="{_num(x0)}" y="{bar_y}" width="{_num(x1 - x0)}" height="14" rx="3"/>'
            f'<text class="event-label" x="{_num(tx)}" y="{text_y}" text-anchor="{anchor}">'
            f"{_esc(e.label)}</text></g>"
        )
    out.append("</svg>")
    return Markup("".join(out))


def _timeline_for(run: Mapping[str, Any], label: str, business_id: str) -> Timeline | None:
    finding = next(
        (f for f in run.get("findings") or [] if f.get("business_id") == business_id), None
    )
    if finding is not None:
        events = _read_events(finding.get("reads") or [], business_id) + _write_events(
            finding.get("writes") or [], business_id
        )
    else:
        writes = [
            {**w, "done_ms": float(w.get("at_ms", 0)) + float(w.get("duration_us") or 0) / 1000}
            for w in run.get("write_decisions") or []
            if w.get("business_id") == business_id
        ]
        if not writes:
            return None
        events = _write_events(writes, business_id)
    events.sort(key=lambda e: (e.start_ms, e.kind))
    return Timeline(
        run_label=label,
        business_id=business_id,
        events=events,
        summary=_timeline_summary(events, business_id),
        svg=svg_timeline(events, title=f"{label} — {business_id}"),
    )


def _race_ids(runs: Sequence[Mapping[str, Any]]) -> tuple[list[str], bool]:
    """Business ids to draw, and whether they were double-written (else just examples)."""
    findings = [f for run in runs for f in run.get("findings") or []]
    if findings:
        # The clearest race first: most reads that saw the item absent, then most accepted writes.
        def rank(f: Mapping[str, Any]) -> tuple[int, int, str]:
            absent = sum(1 for r in f.get("reads") or [] if r.get("found") is None)
            return (-absent, -int(f.get("accepted_writes") or 0), str(f.get("business_id")))

        ids = list(dict.fromkeys(str(f.get("business_id")) for f in sorted(findings, key=rank)))
        return ids[:RACE_IDS_SHOWN], True
    per_id: Counter[str] = Counter(
        str(w.get("business_id"))
        for run in runs
        for w in run.get("write_decisions") or []
        if w.get("business_id") is not None
    )
    ranked = sorted(per_id.items(), key=lambda kv: (-kv[1], kv[0]))
    return [bid for bid, n in ranked[:1] if n > 1], False


# --------------------------------------------------------------------------- the page


def _run_labels(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Variant names; a sweep's repeated names get the settings that differ between cells."""
    names = [str(run.get("variant", f"run {i + 1}")) for i, run in enumerate(runs)]
    if len(set(names)) == len(names):
        return names
    settings = [run.get("settings") or {} for run in runs]
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


def _reproduce_command(report: Mapping[str, Any]) -> tuple[str, bool]:
    command = report.get("command")
    if command:
        return str(command), False
    scenario = report.get("scenario") or {}
    name = scenario.get("name") or "SCENARIO"
    variants = list(dict.fromkeys(str(run.get("variant")) for run in report.get("runs") or []))
    seed = report.get("seed")
    if len(variants) > 1:
        return f"loadtest compare {name} --variants {','.join(variants)} --seed {seed}", True
    variant = f" --variant {variants[0]}" if variants else ""
    return f"loadtest run {name}{variant} --seed {seed}", True


def _count_cells(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    names = list(COUNT_ORDER)
    for run in runs:
        for key in run.get("counts") or {}:
            if key not in names:
                names.append(key)
    rows = []
    for name in names:
        cells = []
        for run in runs:
            value = (run.get("counts") or {}).get(name)
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
            continue  # counts beyond DESIGN.md's list only when they have something to say
        rows.append({"name": name, "cells": cells, "flag": any(c["level"] == "bad" for c in cells)})
    return rows


def _latency_rows(runs: Sequence[Mapping[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    rows = []
    for name in names:
        for key, label in PERCENTILE_KEYS:
            values = [((run.get("latency_us") or {}).get(name) or {}).get(key) for run in runs]
            present = [v for v in values if isinstance(v, int | float)]
            best = min(present) if len(present) > 1 else None
            cells = [
                {"text": "–" if v is None else format_us(v), "best": v is not None and v == best}
                for v in values
            ]
            rows.append({"name": name, "stat": label, "cells": cells})
    return rows


def _latency_names(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for run in runs:
        for key in list(run.get("latency_hdr") or {}) + list(run.get("latency_us") or {}):
            if key not in names:
                names.append(key)
    if "end_to_end" in names:
        names.remove("end_to_end")
        names.insert(0, "end_to_end")
    return names


def _percentile_plots(
    runs: Sequence[Mapping[str, Any]], labels: Sequence[str], names: Sequence[str]
) -> list[Markup]:
    plots = []
    for index, name in enumerate(names):
        series = []
        for i, (run, label) in enumerate(zip(runs, labels, strict=True)):
            encoded = (run.get("latency_hdr") or {}).get(name)
            points = percentile_curve(encoded) if encoded else []
            summary = (run.get("latency_us") or {}).get(name) or {}
            markers = []
            for key, text in PERCENTILE_KEYS[:4]:
                p = {"p50": 50, "p90": 90, "p99": 99, "p99_9": 99.9}[key]
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


def _write_rows(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for index, w in enumerate(run.get("write_decisions") or []):
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


def _warnings(report: Mapping[str, Any], labels: Sequence[str]) -> list[str]:
    out = []
    for run, label in zip(report.get("runs") or [], labels, strict=True):
        for warning in run.get("warnings") or []:
            out.append(f"{label}: {warning}")
        if run.get("timed_out"):
            out.append(f"{label}: the run hit its deadline before every message settled")
        for problem in run.get("cleanup_problems") or []:
            out.append(f"{label}: cleanup: {problem}")
        total = run.get("write_decisions_total")
        shown = len(run.get("write_decisions") or [])
        if isinstance(total, int) and total > shown:
            out.append(f"{label}: write decisions listed for the first {shown} of {total} writes")
    return out


def _thresholds(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    results = sorted(run.get("thresholds") or [], key=lambda r: bool(r.get("ok")))  # failing first
    return [
        {"expr": r.get("expr"), "observed": format_observed(r, run), "ok": bool(r.get("ok"))}
        for r in results
    ]


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("loadtest", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["us"] = format_us
    env.filters["item"] = format_item
    return env


def render_html(report: Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page (no network needed to view it).

    Deterministic: the same report gives the same string. ``report`` is the
    JSON report dict (``schema_version`` 1), as built by
    ``loadtest.report.build_report`` or read back from a saved file.
    """
    runs: list[Mapping[str, Any]] = list(report.get("runs") or [])
    labels = _run_labels(runs)
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(runs))]
    latency_names = _latency_names(runs)
    command, reconstructed = _reproduce_command(report)

    race_ids, raced = _race_ids(runs)
    races = []
    for business_id in race_ids:
        timelines = []
        missing = []
        for run, label in zip(runs, labels, strict=True):
            timeline = _timeline_for(run, label, business_id)
            if timeline is None:
                missing.append(label)
            else:
                timelines.append(timeline)
        races.append({"business_id": business_id, "timelines": timelines, "missing": missing})
    other_findings = []
    for run, label in zip(runs, labels, strict=True):
        for f in run.get("findings") or []:
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
                Series(label, color, pts, markers=_step_markers(pts, "msg/s"))
                for run, label, color in zip(runs, labels, colors, strict=True)
                for pts in [_step_series(run, "acked", per_s=True)]
            ],
            title="Throughput: messages acknowledged per second",
            y_label="messages/s",
        ),
        svg_step_chart(
            [
                Series(label, color, pts, markers=_step_markers(pts, "duplicate writes"))
                for run, label, color in zip(runs, labels, colors, strict=True)
                for pts in [_step_series(run, "duplicate_writes", per_s=False)]
            ],
            title="Duplicate writes per interval",
            y_label="duplicate writes",
        ),
    ]

    run_views = []
    for run, label, color in zip(runs, labels, colors, strict=True):
        rows = _write_rows(run)
        errors_by_text: dict[tuple[str, str], int] = defaultdict(int)
        for e in run.get("errors") or []:
            errors_by_text[(str(e.get("outcome", "")), str(e.get("error", "")))] += int(
                e.get("count") or 1
            )
        run_views.append(
            {
                "run": run,
                "label": label,
                "color": color,
                "verdict": str(run.get("verdict", "unknown")),
                "reasons": list(run.get("reasons") or [])
                + [f"inconclusive: {r}" for r in run.get("inconclusive") or []]
                + list(run.get("notes") or []),
                "relaxed": list(run.get("relaxed_reasons") or []),
                "thresholds": _thresholds(run),
                "write_rows": rows,
                "write_total": run.get("write_decisions_total", len(rows)),
                "write_outcomes": run.get("write_outcomes") or {},
                "errors": [
                    {"outcome": o, "error": e, "count": n}
                    for (o, e), n in sorted(errors_by_text.items(), key=lambda kv: (-kv[1], kv[0]))
                ],
                "dead_letters": list(run.get("dead_letters") or []),
                "settings": run.get("settings") or {},
                "throughput": run.get("throughput") or {},
                "queue_after": run.get("queue_after") or {},
                "table_after": run.get("table_after") or {},
            }
        )

    template = _environment().get_template("report.html.j2")
    return template.render(
        report=report,
        scenario=report.get("scenario") or {},
        backend=report.get("backend") or {},
        runs=run_views,
        command=command,
        command_reconstructed=reconstructed,
        warnings=_warnings(report, labels),
        count_rows=_count_cells(runs),
        latency_rows=_latency_rows(runs, latency_names),
        latency_plots=_percentile_plots(runs, labels, latency_names),
        over_time=over_time,
        races=races,
        raced=raced,
        other_findings=other_findings,
        page_rows=WRITE_TABLE_PAGE_ROWS,
        sweep=html_section(report, report.get("sweep_metric")),
    )
