"""Sweep heatmaps: one metric over the grid of a sweep, one panel per variant.

Owns the sweep metrics a user tunes against (duplicate writes, redeliveries,
end-to-end p99, cost per million messages), how a sweep's cells are laid out
on a grid, the SVG heatmap of the HTML page and the grid tables of the
terminal. Renders from the report model (``loadtest.reports.model``), like
``loadtest.reports.text.render`` and ``loadtest.reports.html.page``; it never re-derives a count. The
HTML page only includes :func:`html_section`; links point at ``#run-N``,
the N-th run of the report.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from markupsafe import Markup
from rich.table import Table
from rich.text import Text

from loadtest.model.figures.metrics import format_us
from loadtest.reports.model import ReportModel, RunModel, as_model


@dataclass(frozen=True)
class Metric:
    """A number per run, shown on the grid."""

    name: str
    """What ``loadtest sweep --metric`` takes."""
    title: str
    read: Callable[[RunModel], float | None]
    format: Callable[[float], str]


def _path(*keys: str) -> Callable[[RunModel], float | None]:
    def read(run: RunModel) -> float | None:
        node: Any = run.figures()
        for key in keys:
            if not isinstance(node, Mapping) or key not in node:
                return None
            node = node[key]
        if isinstance(node, bool) or not isinstance(node, int | float):
            return None
        return node

    return read


METRICS: tuple[Metric, ...] = (
    Metric(
        "duplicate_writes",
        "Duplicate writes",
        _path("counts", "duplicate_writes"),
        lambda v: f"{v:.0f}",
    ),
    Metric("redeliveries", "Redeliveries", _path("counts", "redeliveries"), lambda v: f"{v:.0f}"),
    Metric(
        "e2e_p99",
        "End-to-end p99",
        _path("latency_us", "end_to_end", "p99"),
        format_us,
    ),
    Metric(
        "cost",
        "Cost per million messages (USD)",
        _path("cost", "per_million_usd"),
        lambda v: f"${v:,.2f}",
    ),
)
EFFECT_METRICS: tuple[Metric, ...] = (
    Metric(
        "duplicate_effects",
        "Duplicate effects",
        _path("counts", "duplicate_effects"),
        lambda v: f"{v:.0f}",
    ),
    Metric("lost_effects", "Lost effects", _path("counts", "lost_effects"), lambda v: f"{v:.0f}"),
)
"""Metrics of a sweep whose runs have sinks or effects (shown after the others then)."""
ALIASES: Mapping[str, str] = {
    "duplicates": "duplicate_writes",
    "end_to_end.p99": "e2e_p99",
    "p99": "e2e_p99",
    "cost.per_million_usd": "cost",
    "cost_per_million": "cost",
}
METRIC_NAMES: tuple[str, ...] = tuple(m.name for m in (*METRICS, *EFFECT_METRICS))


def metric_named(name: str) -> Metric:
    """The metric called ``name`` (or an alias); ValueError naming the choices."""
    wanted = ALIASES.get(name, name)
    for metric in (*METRICS, *EFFECT_METRICS):
        if metric.name == wanted:
            return metric
    raise ValueError(f"unknown sweep metric {name!r}; choose one of {', '.join(METRIC_NAMES)}")


def ordered(first: str | None, *, effects: bool = False) -> list[Metric]:
    """Every metric (the effects' too, with ``effects``), ``first`` (if given) in front."""
    shown = [*METRICS, *(EFFECT_METRICS if effects else ())]
    if first is None:
        return shown
    chosen = metric_named(first)
    return [chosen, *(m for m in shown if m is not chosen)]


def _has_effects(report: ReportModel) -> bool:
    return any("effects_sent" in run.counts for run in report.runs)


# --- the grid -------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    run_index: int
    """Position of the run in ``report["runs"]`` (the page's ``#run-N``)."""
    value: float | None
    failing: bool


@dataclass(frozen=True)
class Panel:
    variant: str
    x_axis: str
    x_values: tuple[str, ...]
    y_axis: str
    y_values: tuple[str, ...]
    cells: Mapping[tuple[str, str], Cell]
    """By (y, x) label."""


def _label(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def axes(runs: Sequence[RunModel]) -> list[str]:
    return list(dict.fromkeys(key for run in runs for key in run.cell))


def panels(report: ReportModel | Mapping[str, Any], metric: Metric) -> list[Panel]:
    """One panel per variant: the first axis across, the others (joined) down."""
    runs = as_model(report).runs
    names = axes(runs)
    if not names:
        return []
    x_axis, y_axes = names[0], names[1:]
    out = []
    for variant in dict.fromkeys(run.variant for run in runs):
        xs: dict[str, None] = {}
        ys: dict[str, None] = {}
        cells: dict[tuple[str, str], Cell] = {}
        for index, run in enumerate(runs):
            if run.variant != variant:
                continue
            cell = run.cell
            x = _label(cell.get(x_axis, "–"))
            if len(y_axes) == 1:
                y = _label(cell.get(y_axes[0], "–"))
            else:
                y = ", ".join(f"{a}={_label(cell.get(a, '–'))}" for a in y_axes) or "all"
            xs[x] = None
            ys[y] = None
            cells[(y, x)] = Cell(index, metric.read(run), run.verdict == "fail")
        out.append(Panel(variant, x_axis, tuple(xs), ", ".join(y_axes) or "", tuple(ys), cells))
    return out


# --- HTML -----------------------------------------------------------------------

_RAMP = ((255, 247, 188), (254, 196, 79), (236, 112, 20), (153, 52, 4))
"""Light (low) to dark (high): every metric here is better when lower."""


def _color(t: float) -> str:
    t = min(1.0, max(0.0, t))
    span = t * (len(_RAMP) - 1)
    i = min(int(span), len(_RAMP) - 2)
    f = span - i
    a, b = _RAMP[i], _RAMP[i + 1]
    r, g, bl = (round(a[k] + (b[k] - a[k]) * f) for k in range(3))
    return f"#{r:02x}{g:02x}{bl:02x}"


def svg_panel(panel: Panel, metric: Metric, low: float, high: float) -> Markup:
    """One variant's heatmap: values written in, failing cells outlined and marked ✗."""
    cw, ch, left, top = 104, 50, 150, 58
    width = left + cw * len(panel.x_values) + 12
    height = top + ch * len(panel.y_values) + 12
    parts = [
        f'<svg class="heatmap" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(metric.title)}: {escape(panel.variant)}" '
        'style="font: 12px system-ui, sans-serif">',
        f'<text x="4" y="16" font-weight="700" font-size="14">{escape(panel.variant)}</text>',
        f'<text x="{left}" y="34" fill="#555">{escape(panel.x_axis)} →</text>',
    ]
    if panel.y_axis:
        parts.append(f'<text x="4" y="{top - 6}" fill="#555">{escape(panel.y_axis)} ↓</text>')
    for i, x in enumerate(panel.x_values):
        parts.append(
            f'<text x="{left + cw * i + cw / 2}" y="{top - 6}" text-anchor="middle" '
            f'font-weight="600">{escape(x)}</text>'
        )
    for j, y in enumerate(panel.y_values):
        cy = top + ch * j
        parts.append(
            f'<text x="{left - 8}" y="{cy + ch / 2 + 4}" text-anchor="end" '
            f'font-weight="600">{escape(y)}</text>'
        )
        for i, x in enumerate(panel.x_values):
            cx = left + cw * i
            cell = panel.cells.get((y, x))
            if cell is None:
                parts.append(
                    f'<rect x="{cx}" y="{cy}" width="{cw - 2}" height="{ch - 2}" fill="#f3f4f6"/>'
                )
                continue
            if cell.value is None:
                fill, text, ink = "#e5e7eb", "no data", "#555"
            else:
                t = 0.0 if high <= low else (cell.value - low) / (high - low)
                fill, text = _color(t), metric.format(cell.value)
                ink = "#fff" if t > 0.6 else "#111"
            stroke = ' stroke="#b91c1c" stroke-width="3"' if cell.failing else ' stroke="#fff"'
            title = f"{panel.variant} {panel.x_axis}={x} {y}: {text}" + (
                " — FAIL" if cell.failing else ""
            )
            parts.append(
                f'<a href="#run-{cell.run_index}" class="heat-cell'
                f'{" failing" if cell.failing else ""}"><title>{escape(title)}</title>'
                f'<rect x="{cx}" y="{cy}" width="{cw - 2}" height="{ch - 2}" rx="3" '
                f'fill="{fill}"{stroke}/>'
                f'<text x="{cx + cw / 2 - 1}" y="{cy + ch / 2 + 4}" text-anchor="middle" '
                f'fill="{ink}" font-weight="600">{escape(text)}</text>'
            )
            if cell.failing:
                parts.append(
                    f'<text x="{cx + cw - 8}" y="{cy + 14}" text-anchor="end" fill="{ink}" '
                    'font-size="11" font-weight="700">✗ fail</text>'
                )
            parts.append("</a>")
    parts.append("</svg>")
    return Markup("".join(parts))


def html_section(report: ReportModel | Mapping[str, Any], first: str | None = None) -> Markup:
    """The page's sweep section (empty for a report that is not a sweep).

    One heatmap per metric, one panel per variant, on a colour scale shared by
    the panels of that metric so variants compare at a glance.
    """
    report = as_model(report)
    blocks = []
    for metric in ordered(first, effects=_has_effects(report)):
        shown = panels(report, metric)
        if not shown:
            return Markup("")
        values = [c.value for p in shown for c in p.cells.values() if c.value is not None]
        low, high = (min(values), max(values)) if values else (0.0, 0.0)
        svgs = "".join(f"<div>{svg_panel(p, metric, low, high)}</div>" for p in shown)
        blocks.append(
            f'<h3 id="heat-{metric.name}">{escape(metric.title)}</h3>'
            f'<div class="heatmaps" style="display:flex;flex-wrap:wrap;gap:18px">{svgs}</div>'
        )
    return Markup(
        '<section id="sweep"><h2>Sweep</h2>'
        '<p class="muted">Each cell is one run of the grid: darker is higher (worse). '
        "A red outline and ✗ mark a run that failed its verdict or a threshold; "
        "click a cell to open its run.</p>" + "".join(blocks) + "</section>"
    )


# --- terminal -------------------------------------------------------------------


def grid_tables(report: ReportModel | Mapping[str, Any], first: str | None = None) -> list[Table]:
    """One table per metric: the grid's first axis across, variant and other axes down."""
    report = as_model(report)
    tables = []
    for metric in ordered(first, effects=_has_effects(report)):
        shown = panels(report, metric)
        if not shown:
            return []
        xs = list(dict.fromkeys(x for p in shown for x in p.x_values))
        table = Table(title=f"{metric.title} · sweep grid", title_justify="left")
        table.add_column("variant", style="bold")
        if shown[0].y_axis:
            table.add_column(shown[0].y_axis)
        for x in xs:
            table.add_column(f"{shown[0].x_axis}={x}", justify="right")
        for panel in shown:
            for y in panel.y_values:
                row: list[Text | str] = [panel.variant]
                if panel.y_axis:
                    row.append(y)
                for x in xs:
                    cell = panel.cells.get((y, x))
                    if cell is None:
                        row.append("")
                        continue
                    text = "no data" if cell.value is None else metric.format(cell.value)
                    row.append(Text(f"✗ {text}", style="bold red") if cell.failing else Text(text))
                table.add_row(*row)
        tables.append(table)
    return tables
