"""The HTML report's race timeline: which deliveries raced on one business id, in the backend's order.

Owns reading a run's write decisions back into timeline events and drawing
them as an SVG: the reads that saw "absent", then the writes they made, each mark at
its true time in its execution environment's lane. Marks may sit a pixel apart; their
labels never overlap: a lane's labels are packed into as many rows as they need, by
the room ``loadtest.reports.html.charts.TEXT_CHAR_PX`` gives a character, and the lane
grows to hold them. An explored schedule's steps are drawn by
``loadtest.reports.html.steps``.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from loadtest.reports.html.charts import (
    TEXT_CHAR_PX,
    TEXT_HEIGHT_PX,
    _tick_label,
    esc,
    fit,
    format_item,
    nice_ticks,
    num,
    shorten,
)
from loadtest.reports.model import RunModel

RACE_IDS_SHOWN = 2
"""Double-written business ids whose timeline is drawn."""


# --------------------------------------------------------------------------- race timeline


@dataclass(frozen=True)
class TimelineEvent:
    """One bar of a race timeline: a read, a write or an effect by one execution environment."""

    kind: str
    """"read", "write" or "effect" (a call that sent something beyond the table)."""
    environment: str
    start_ms: float
    """Offset from the start of the run (in milliseconds)."""
    end_ms: float
    css: str
    label: str
    detail: str
    above: bool | None = None
    """Where its label goes: above the bar, or below; unset, reads above, writes below."""


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
                label = f"{op} ✓ stored: ∅ → {shorten(after, 40)}"
            elif before == after:
                label = f"{op} ✓ overwrote {shorten(before, 40)} → same item"
            else:
                label = f"{op} ✓ overwrote {shorten(before, 28)} → {shorten(after, 28)}"
        elif outcome == "accepted":
            css, label = "w-accepted", f"{op} ✓ ({role or 'accepted'})"
        elif outcome == "rejected":
            css, label = "w-rejected", f"{op} ✗ rejected — kept {shorten(before, 40)}"
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
                label=f"GetItem → {'absent' if found is None else 'saw ' + shorten(saw, 40)}",
                detail=f"env {r.get('environment')} GetItem saw {saw}; at {float(r.get('at_ms', 0)):.1f} ms",
            )
        )
    return events


def _effect_events(run: RunModel, business_id: str) -> list[TimelineEvent]:
    """The effects the run's witnesses name for ``business_id``: each call that sent one,
    once, as a mark in its environment's lane (none for a run without effects)."""
    events: dict[tuple[str, str, float], TimelineEvent] = {}
    for entry in run.effects or ():
        sink = str(entry.get("sink"))
        for witness in entry.get("witnesses", ()):
            if witness.get("business_id") != business_id:
                continue
            for d in witness.get("deliveries", ()):
                operation = d.get("operation")
                if not operation or "at_ms" not in d:
                    continue  # a delivery that sent nothing (a lost effect's)
                at = float(d["at_ms"])
                events[(str(d.get("request_id")), sink, at)] = TimelineEvent(
                    kind="effect",
                    environment=str(d.get("environment")),
                    start_ms=at,
                    end_ms=float(d.get("done_ms", at)),
                    css="effect",
                    label=f"{operation} → {sink}",
                    detail=(
                        f"env {d.get('environment')} {operation} to {sink} for {business_id} "
                        f"({witness.get('anomaly')}: {witness.get('text')}); at {at:.1f} ms"
                    ),
                    above=True,
                )
    return list(events.values())


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
    effects = [e for e in events if e.kind == "effect"]
    if effects:
        parts.append(f"{len(effects)} effect(s) sent beyond the table")
    return "; ".join(parts) + "." if parts else "No reads or writes were recorded for this id."


LABEL_ROW_PX = 14
"""Pitch of the rows a lane's labels are packed into (in pixels): above the 11 px label
font with its descenders, so labels of neighbouring rows never touch."""
LABEL_GAP_PX = 8
"""Room kept between two labels of one row (in pixels)."""
_BAR_PX = 14
_DESCENT_PX = TEXT_HEIGHT_PX["event-label"] / 4


@dataclass(frozen=True)
class _Label:
    """Where one mark's label goes: its text as drawn and its box on the x axis (in pixels)."""

    text: str
    anchor: str
    """``start`` (from the bar's left edge) or ``end`` (to its right edge)."""
    left: float
    right: float
    above: bool


def _label_for(e: TimelineEvent, x0: float, x1: float, plot: tuple[float, float]) -> _Label:
    """``e``'s label beside its bar (``x0``..``x1``) in the plot (left and right edge):
    from the bar's start to the right, or to its end when only that side has room, cut
    to the wider side's room when neither holds it."""
    above = e.kind == "read" if e.above is None else e.above
    char_px = TEXT_CHAR_PX["event-label"]
    room_right, room_left = plot[1] - x0, x1 - plot[0]
    text = e.label
    if len(text) * char_px > max(room_right, room_left):
        text = fit(text, "event-label", max(room_right, room_left))
    width = len(text) * char_px
    if width <= room_right:
        return _Label(text, "start", x0, x0 + width, above)
    return _Label(text, "end", x1 - width, x1, above)


def _pack_rows(spans: Sequence[tuple[float, float]], gap: float = LABEL_GAP_PX) -> list[int]:
    """The row of each span (left, right): taken by left edge, each goes to the first row
    whose last span ends ``gap`` before it starts. As few rows as the most spans that
    meet at one point (widened by ``gap``) need."""
    rows: list[float] = []  # the right edge of each row's last span
    out = [0] * len(spans)
    for i in sorted(range(len(spans)), key=lambda i: (spans[i][0], i)):
        left, right = spans[i]
        row = next((r for r, end in enumerate(rows) if end + gap <= left), len(rows))
        if row == len(rows):
            rows.append(right)
        else:
            rows[row] = right
        out[i] = row
    return out


def svg_timeline(
    events: Sequence[TimelineEvent],
    *,
    title: str,
    width: int = 1060,
    axis_label: str = "ms since the run started",
) -> Markup:
    """One lane per execution environment; bars for reads and writes on a shared axis
    (milliseconds, or an explored schedule's steps), each at its true time.

    Reads (and effects) are labelled above their bar, writes below. The labels of one
    lane on one side are packed into rows by the room :data:`TEXT_CHAR_PX` gives them, a
    lane as tall as its rows need, so no two overlap however close the marks; a label in
    a row away from its bar has a leader line to it. A label wider than the plot is cut
    to the room it has and keeps its whole text in its tooltip, and each is clipped to
    its box, so wider glyphs than assumed still end there."""
    ordered = sorted(events, key=lambda e: (e.start_ms, e.kind))
    lanes = list(dict.fromkeys(e.environment for e in ordered))
    right, top, bottom = 20, 30, 36
    # Room for the longest lane label ("env 12").
    longest = max((len(f"env {lane}") for lane in lanes), default=0)
    left = max(70, 16 + math.ceil(TEXT_CHAR_PX["lane-label"] * longest))
    pw = width - left - right
    t0 = min((e.start_ms for e in events), default=0.0)
    t1 = max((e.end_ms for e in events), default=1.0)
    pad = max((t1 - t0) * 0.04, 0.5)
    ticks = nice_ticks(t0 - pad, t1 + pad, 8)
    lo, hi = ticks[0], ticks[-1]

    def sx(ms: float) -> float:
        return left + pw * (ms - lo) / (hi - lo)

    bars = [(sx(e.start_ms), max(sx(e.end_ms), sx(e.start_ms) + 3)) for e in ordered]
    labels = [
        _label_for(e, x0, x1, (left, left + pw)) for e, (x0, x1) in zip(ordered, bars, strict=True)
    ]
    rows = [0] * len(ordered)
    above_rows, below_rows = [1] * len(lanes), [1] * len(lanes)
    for i, lane in enumerate(lanes):
        for above, counts in ((True, above_rows), (False, below_rows)):
            members = [
                n
                for n, e in enumerate(ordered)
                if e.environment == lane and labels[n].above == above
            ]
            packed = _pack_rows([(labels[n].left, labels[n].right) for n in members])
            for n, row in zip(members, packed, strict=True):
                rows[n] = row
            counts[i] = max([1, *(row + 1 for row in packed)])
    # A lane, top to bottom: 8 px, its rows of labels above (one at least), its bars, its
    # rows below (one at least), 8 px.
    lane_h = [
        8 + LABEL_ROW_PX * a + _BAR_PX + LABEL_ROW_PX * b + 8
        for a, b in zip(above_rows, below_rows, strict=True)
    ]
    lane_y = [top + sum(lane_h[:i]) for i in range(len(lanes))]
    height = top + bottom + (sum(lane_h) if lanes else 58)
    # Ids unique to this drawing (a page draws several), the same for the same events.
    uid = "race-" + hashlib.sha1(f"{title}{list(ordered)!r}".encode()).hexdigest()[:10]

    out = [
        f'<svg class="plot timeline" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{esc(title)}" xmlns="http://www.w3.org/2000/svg">',
        f'<text class="plot-title" x="{left}" y="18">{esc(title)}</text>',
    ]
    for tick in ticks:
        x = sx(tick)
        out.append(
            f'<line class="grid" x1="{num(x)}" x2="{num(x)}" y1="{top}" y2="{height - bottom}"/>'
            f'<text class="tick" x="{num(x)}" y="{height - bottom + 15}" text-anchor="middle">'
            f"{_tick_label(tick)}</text>"
        )
    out.append(
        f'<text class="axis-label" x="{left + pw / 2}" y="{height - 4}" text-anchor="middle">'
        f"{esc(axis_label)}</text>"
    )
    for i, lane in enumerate(lanes):
        y = lane_y[i]
        out.append(
            f'<rect class="lane{" odd" if i % 2 else ""}" x="{left}" y="{y}" width="{pw}" '
            f'height="{lane_h[i]}"/>'
            f'<text class="lane-label" x="{left - 8}" y="{y + lane_h[i] / 2 + 4}" '
            f'text-anchor="end">env {esc(lane)}</text>'
        )
    clips: list[str] = []
    leaders: list[str] = []
    marks: list[list[str]] = [[] for _ in lanes]
    for n, e in enumerate(ordered):
        i = lanes.index(e.environment)
        bar_y = lane_y[i] + 8 + LABEL_ROW_PX * above_rows[i]
        x0, x1 = bars[n]
        label, row = labels[n], rows[n]
        if label.above:
            text_y = bar_y - 5 - LABEL_ROW_PX * row
        else:
            text_y = bar_y + _BAR_PX + 13 + LABEL_ROW_PX * row
        tx = x0 if label.anchor == "start" else x1
        if row:
            # From the bar's edge to the foot (or the top) of the label's first (or last) glyph.
            y1, y2 = float(bar_y), float(text_y)
            if not label.above:
                y1, y2 = y1 + _BAR_PX, y2 - TEXT_HEIGHT_PX["event-label"]
            leaders.append(
                f'<line class="leader" x1="{num(tx)}" x2="{num(tx)}" y1="{num(y1)}" y2="{num(y2)}"/>'
            )
        clip_top = text_y + _DESCENT_PX - LABEL_ROW_PX
        clips.append(
            f'<clipPath id="{uid}-{n}"><rect x="{num(label.left)}" y="{num(clip_top)}" '
            f'width="{num(label.right - label.left)}" height="{LABEL_ROW_PX}"/></clipPath>'
        )
        title_text = e.detail if label.text == e.label else f"{e.label}\n{e.detail}"
        marks[i].append(
            f'<g class="event {e.kind} {e.css}"><title>{esc(title_text)}</title>'
            f'<rect class="bar" x="{num(x0)}" y="{bar_y}" width="{num(x1 - x0)}" height="{_BAR_PX}" rx="3"/>'
            f'<text class="event-label" x="{num(tx)}" y="{num(text_y)}" text-anchor="{label.anchor}" '
            f'clip-path="url(#{uid}-{n})">{esc(label.text)}</text></g>'
        )
    if clips:
        out.append(f"<defs>{''.join(clips)}</defs>")
    # The leaders go under every label, whose halo (the lane's colour) keeps them off its glyphs.
    out.extend(leaders)
    for i, lane_marks in enumerate(marks):
        out.append(f'<g class="lane-marks{" odd" if i % 2 else ""}">{"".join(lane_marks)}</g>')
    out.append("</svg>")
    return Markup("".join(out))


def timeline_for(run: RunModel, label: str, business_id: str) -> Timeline | None:
    finding = next((f for f in run.findings if f.get("business_id") == business_id), None)
    if finding is not None:
        events = _read_events(finding.get("reads") or [], business_id) + _write_events(
            finding.get("writes") or [], business_id
        )
    else:
        writes = [
            {**w, "done_ms": float(w.get("at_ms", 0)) + float(w.get("duration_us") or 0) / 1000}
            for w in run.write_decisions
            if w.get("business_id") == business_id
        ]
        if not writes:
            return None
        events = _write_events(writes, business_id)
    events += _effect_events(run, business_id)
    events.sort(key=lambda e: (e.start_ms, e.kind))
    return Timeline(
        run_label=label,
        business_id=business_id,
        events=events,
        summary=_timeline_summary(events, business_id),
        svg=svg_timeline(events, title=f"{label} — {business_id}"),
    )


def find_races(runs: Sequence[RunModel]) -> tuple[list[str], bool]:
    """Business ids to draw, and whether they were double-written (else just examples)."""
    findings = [f for run in runs for f in run.findings]
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
        for w in run.write_decisions
        if w.get("business_id") is not None
    )
    ranked = sorted(per_id.items(), key=lambda kv: (-kv[1], kv[0]))
    return [bid for bid, n in ranked[:1] if n > 1], False
