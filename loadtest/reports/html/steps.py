"""The HTML report's drawing of an explored schedule: its steps, one row each.

Owns the layout of a counterexample's steps as an SVG. The schedule's order runs top
to bottom, one row per step; a column on the left holds the step labels and one
column per execution environment (and delivery) holds the bars. Every label sits in
a row of its own, inside its own column, cut to the column's width with the whole
text in its tooltip: no two labels overlap, whatever the number of steps, of
deliveries or the labels' lengths. A label is cut with an ellipsis to its column by the
advance ``loadtest.reports.html.charts.TEXT_CHAR_PX`` assumes a character of each text
class takes; each text is also clipped to its column, so a label of wider glyphs than
assumed still ends at its column's edge.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from typing import Any

from markupsafe import Markup

from loadtest.reports.html.charts import esc, fit, format_item, num

ROW_PX = 22
"""Height of one step's row (in pixels): above the 11 px label font, so rows never touch."""
_PAD = 8
_MIN_LANE_PX = 130
_TOP = 30
_HEADER = 22


def _step_css(step: Mapping[str, Any]) -> tuple[str, str]:
    """A counterexample step's kind and bar style: what its answer says it was."""
    answer = str(step.get("answer") or "")
    if answer == "absent":
        return "read", "read-absent"
    if answer.startswith("found"):
        return "read", "read-found"
    if answer == "accepted":
        # An accepted write that found the item there wrote the outcome again.
        return "write", "w-again" if step.get("item_before") is not None else "w-accepted"
    if answer.startswith("rejected"):
        return "write", "w-rejected"
    if answer and answer != "answered":
        return "write", "w-error"
    return "step", "step"


def explore_timeline(
    steps: Sequence[Mapping[str, Any]],
    *,
    title: str = "The counterexample, step by step",
    width: int = 1060,
) -> Markup | None:
    """A counterexample (the ``explore`` object's steps) as an SVG: one row per step in
    the schedule's order, its label on the left, its bar in its environment's column,
    faults marked. None when there are no steps."""
    if not steps:
        return None
    lanes = list(
        dict.fromkeys(f"{s.get('environment')} · delivery {s.get('delivery')}" for s in steps)
    )
    label_w = round(width * 0.55)
    lane_w = max(_MIN_LANE_PX, (width - label_w - _PAD) / len(lanes))
    width = max(width, math.ceil(label_w + lane_w * len(lanes) + _PAD))
    rows_top = _TOP + _HEADER
    height = rows_top + ROW_PX * len(steps) + _PAD

    # Ids unique to this drawing (a page draws one per bug), the same for the same steps.
    uid = "steps-" + hashlib.sha1(f"{title}{list(steps)!r}".encode()).hexdigest()[:10]

    def clip(name: str, x: float, y: float, w: float, h: float) -> str:
        return (
            f'<clipPath id="{uid}-{name}"><rect x="{num(x)}" y="{num(y)}" width="{num(w)}" '
            f'height="{num(h)}"/></clipPath>'
        )

    clips = [
        clip("title", 0, 0, width, _TOP),
        clip("labels", 0, _TOP, label_w - _PAD / 2, height - _TOP),
        *(
            clip(f"lane{i}", label_w + i * lane_w + _PAD / 2, _TOP, lane_w - _PAD, _HEADER)
            for i in range(len(lanes))
        ),
    ]
    out = [
        f'<svg class="plot timeline steps-view" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{esc(title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        f"<defs>{''.join(clips)}</defs>",
        f'<text class="plot-title" x="{_PAD}" y="18" clip-path="url(#{uid}-title)">'
        f"{esc(fit(title, 'plot-title', width - 2 * _PAD))}</text>",
        f'<text class="axis-label" x="{_PAD}" y="{rows_top - 7}" '
        f'clip-path="url(#{uid}-labels)">'
        f"{esc(fit('step of the schedule ↓', 'axis-label', label_w - 2 * _PAD))}</text>",
    ]
    for i, lane in enumerate(lanes):
        x = label_w + i * lane_w
        name = f"env {lane}"
        out.append(
            f'<rect class="lane{" odd" if i % 2 else ""}" x="{num(x)}" y="{_TOP}" '
            f'width="{num(lane_w)}" height="{height - _TOP - _PAD}"/>'
            f'<g class="lane-head"><title>{esc(name)}</title>'
            f'<text class="lane-label" x="{num(x + lane_w / 2)}" y="{rows_top - 7}" '
            f'text-anchor="middle" clip-path="url(#{uid}-lane{i})">'
            f"{esc(fit(name, 'lane-label', lane_w - 2 * _PAD))}</text></g>"
        )
    for row, step in enumerate(steps):
        number = int(step.get("number") or 0)
        kind, css = _step_css(step)
        fault = step.get("fault")
        answer = step.get("answer")
        label = f"{number}. {step.get('what')}" + (f" → {answer}" if answer else "")
        detail = (
            f"step {number}: delivery {step.get('delivery')} in env {step.get('environment')}, "
            f"t={step.get('at_ms')} ms: {step.get('what')}"
            + (f" → {answer}" if answer else "")
            + (f"; item before: {format_item(step.get('item_before'))}" if kind != "step" else "")
            + (f"; item after: {format_item(step.get('item_after'))}" if kind == "write" else "")
            + (f"; fault: {fault}" if fault else "")
        )
        if fault:
            css, label = f"{css} fault", f"{label} ⚡{fault}"
        y = rows_top + row * ROW_PX
        column = lanes.index(f"{step.get('environment')} · delivery {step.get('delivery')}")
        x = label_w + column * lane_w
        out.append(
            f'<g class="event {kind} {css}"><title>{esc(detail)}</title>'
            f'<line class="grid" x1="{_PAD}" x2="{num(width - _PAD)}" y1="{y + ROW_PX}" '
            f'y2="{y + ROW_PX}"/>'
            f'<rect class="bar" x="{num(x + _PAD)}" y="{y + 5}" width="{num(lane_w - 2 * _PAD)}" '
            f'height="12" rx="3"/>'
            f'<text class="event-label" x="{_PAD}" y="{y + 15}" text-anchor="start" '
            f'clip-path="url(#{uid}-labels)">'
            f"{esc(fit(label, 'event-label', label_w - 2 * _PAD))}</text></g>"
        )
    out.append("</svg>")
    return Markup("".join(out))
