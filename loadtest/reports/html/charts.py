"""The HTML report's charts: inline SVG plots drawn in Python, deterministic and testable.

Owns the percentile plot (latency against a log ``1/(1-p)`` axis, from an
encoded HdrHistogram), the step charts of a run over time, axis ticks and the
SVG path builder, how a value reads on the page (``format_value``, ``format_item``),
and the room a text takes in an SVG: the advance the drawings lay each text class out
with (``TEXT_CHAR_PX``) and a text cut to a width (``fit``). Every text placed in an SVG
is escaped here (``esc``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from markupsafe import Markup

from loadtest.model.figures.metrics import format_us, values_at_percentiles
from loadtest.reports.model import RunModel

PALETTE = ("#2563eb", "#ea580c", "#7c3aed", "#0891b2", "#db2777", "#854d0e", "#4b5563", "#65a30d")
"""Line colours, one per run in report order (cycled past eight); no red or green,
which the page keeps for fail and pass."""

MAX_PERCENTILE_X = 4.0
"""The percentile plot's right edge as log10(1/(1-p)): 4 is 99.99%."""

CURVE_POINTS = 200
"""Samples per percentile curve, evenly spaced on the log percentile axis."""


def esc(value: object) -> str:
    return escape(str(value), quote=True)


def path_d(points: Iterable[tuple[float, float]]) -> str:
    """An SVG path's ``d`` through points already in plot coordinates."""
    return " ".join(f"{'M' if i == 0 else 'L'}{num(x)},{num(y)}" for i, (x, y) in enumerate(points))


def num(value: float) -> str:
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


def shorten(text: str, limit: int = 34) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- text in SVG

TEXT_CHAR_PX: dict[str, float] = {
    "event-label": 7.5,
    "lane-label": 8.5,
    "axis-label": 7.5,
    "plot-title": 8.5,
}
"""The advance (in pixels) the layout allows each character of a text class: above the
average of the page's sans-serif at that class's size and weight (11 px labels, bold for
faults; 12 px bold lane names; 13 px bold title)."""
TEXT_HEIGHT_PX: dict[str, float] = {
    "event-label": 11,
    "lane-label": 12,
    "axis-label": 11,
    "plot-title": 13,
}
"""Font size (in pixels) of each text class."""


def fit(text: str, css: str, width_px: float) -> str:
    """``text`` cut (with an ellipsis) to what ``width_px`` holds in text class ``css``."""
    return shorten(text, max(1, math.floor(width_px / TEXT_CHAR_PX[css])))


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
    # One pass over the filled buckets for all percentiles.
    values = values_at_percentiles(histogram, percentiles)
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
        f'<svg class="plot percentile-plot" id="{esc(plot_id)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{esc(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<text class="plot-title" x="{left}" y="18">{esc(title)}</text>',
    ]
    for tick in y_ticks:
        y = sy(tick)
        out.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{num(y)}" y2="{num(y)}"/>')
        out.append(
            f'<text class="tick" x="{left - 6}" y="{num(y + 4)}" text-anchor="end">'
            f"{_tick_label(tick)}</text>"
        )
    for decade in range(int(MAX_PERCENTILE_X)):
        for sub in range(2, 10):  # minor lines at 1/(1-p) = 2..9 × 10^decade
            x = sx(decade + math.log10(sub))
            out.append(
                f'<line class="grid minor" x1="{num(x)}" x2="{num(x)}" y1="{top}" y2="{top + ph}"/>'
            )
    for decade in range(int(MAX_PERCENTILE_X) + 1):
        x = sx(decade)
        out.append(
            f'<line class="grid major" x1="{num(x)}" x2="{num(x)}" y1="{top}" y2="{top + ph}"/>'
        )
        out.append(
            f'<text class="tick" x="{num(x)}" y="{top + ph + 16}" text-anchor="middle">'
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
        d = path_d((sx(x), sy(y / 1000)) for x, y in s.points)
        out.append(
            f'<path class="series" data-variant="{esc(s.label)}" d="{d}" fill="none" '
            f'stroke="{s.color}" stroke-width="2.2" stroke-linejoin="round"/>'
        )
        for x, y, label in s.markers:
            out.append(
                f'<circle class="marker" data-variant="{esc(s.label)}" cx="{num(sx(x))}" '
                f'cy="{num(sy(y / 1000))}" r="3.5" fill="{s.color}">'
                f"<title>{esc(s.label)} {esc(label)}: {esc(format_us(y))}</title></circle>"
            )
    # Legend, top-left inside the frame (latency curves rise to the right).
    lx, ly = left + 12, top + 14
    for i, s in enumerate(series):
        y = ly + i * 18
        text = f"{s.label}{' — ' + s.note if s.note else ''}"
        out.append(
            f'<g class="legend-item" data-variant="{esc(s.label)}" tabindex="0">'
            f'<rect x="{lx - 4}" y="{y - 11}" width="{min(pw - 20, 14 + 7 * len(text))}" height="16" '
            'class="legend-bg"/>'
            f'<line x1="{lx}" x2="{lx + 18}" y1="{y - 3}" y2="{y - 3}" stroke="{s.color}" stroke-width="3"/>'
            f'<text class="legend" x="{lx + 24}" y="{y + 1}">{esc(text)}</text></g>'
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
        f'role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="plot-title" x="{left}" y="18">{esc(title)}</text>',
    ]
    for tick in y_ticks:
        y = sy(tick)
        out.append(f'<line class="grid" x1="{left}" x2="{left + pw}" y1="{num(y)}" y2="{num(y)}"/>')
        out.append(
            f'<text class="tick" x="{left - 6}" y="{num(y + 4)}" text-anchor="end">{_tick_label(tick)}</text>'
        )
    for tick in x_ticks:
        x = sx(tick)
        out.append(f'<line class="grid" x1="{num(x)}" x2="{num(x)}" y1="{top}" y2="{top + ph}"/>')
        out.append(
            f'<text class="tick" x="{num(x)}" y="{top + ph + 15}" text-anchor="middle">'
            f"{_tick_label(tick)}</text>"
        )
    out.append(f'<rect class="frame" x="{left}" y="{top}" width="{pw}" height="{ph}"/>')
    out.append(
        f'<text class="axis-label" x="{left + pw / 2}" y="{height - 5}" text-anchor="middle">'
        "seconds since the run started</text>"
    )
    out.append(
        f'<text class="axis-label" transform="translate(12 {top + ph / 2}) rotate(-90)" '
        f'text-anchor="middle">{esc(y_label)}</text>'
    )
    for s in series:
        if not s.points:
            continue
        d = path_d((sx(x), sy(y)) for x, y in s.points)
        out.append(
            f'<path class="series" data-variant="{esc(s.label)}" d="{d}" fill="none" '
            f'stroke="{s.color}" stroke-width="2"/>'
        )
        for x0, y, label in s.markers:
            out.append(
                f'<circle class="marker" cx="{num(sx(x0))}" cy="{num(sy(y))}" r="2.5" fill="{s.color}">'
                f"<title>{esc(s.label)}: {esc(label)}</title></circle>"
            )
    lx = left + pw - 8
    for i, s in enumerate(series):
        y = top + 14 + i * 16
        out.append(
            f'<g class="legend-item" data-variant="{esc(s.label)}">'
            f'<line x1="{lx - 16}" x2="{lx}" y1="{y - 4}" y2="{y - 4}" stroke="{s.color}" stroke-width="3"/>'
            f'<text class="legend" x="{lx - 22}" y="{y}" text-anchor="end">{esc(s.label)}</text></g>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def step_series(run: RunModel, name: str, *, per_s: bool) -> list[tuple[float, float]]:
    series = run.series
    values = series.get(name) or []
    interval_s = float(series.get("interval_s") or 1.0)
    duration_s = float(run.throughput.get("duration_s") or len(values) * interval_s)
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


def step_markers(points: list[tuple[float, float]], unit: str) -> list[tuple[float, float, str]]:
    markers = []
    for (x0, y), (x1, _) in zip(points[::2], points[1::2], strict=True):
        markers.append(((x0 + x1) / 2, y, f"{x0:g}–{x1:g} s: {y:.4g} {unit}"))
    return markers
