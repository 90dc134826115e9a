"""The HTML report's race timeline: which deliveries raced on one business id, in the backend's order.

Owns reading a run's write decisions back into timeline events and drawing
them as an SVG: the reads that saw "absent", then the writes they made. An explored
schedule's steps are drawn by ``loadtest.reports.html.steps``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from loadtest.reports.html.charts import (
    _tick_label,
    esc,
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


def svg_timeline(
    events: Sequence[TimelineEvent],
    *,
    title: str,
    width: int = 1060,
    axis_label: str = "ms since the run started",
) -> Markup:
    """One lane per execution environment; bars for reads and writes on a shared axis
    (milliseconds, or an explored schedule's steps)."""
    lanes = list(dict.fromkeys(e.environment for e in sorted(events, key=lambda e: e.start_ms)))
    lane_h, right, top, bottom = 58, 20, 30, 36
    # Room for the longest lane label ("env 2 · delivery 3"), about 7 px a character.
    left = max(70, 16 + 7 * max((len(f"env {lane}") for lane in lanes), default=0))
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
        y = top + i * lane_h
        out.append(
            f'<rect class="lane{" odd" if i % 2 else ""}" x="{left}" y="{y}" width="{pw}" height="{lane_h}"/>'
            f'<text class="lane-label" x="{left - 8}" y="{y + lane_h / 2 + 4}" text-anchor="end">'
            f"env {esc(lane)}</text>"
        )
    for e in sorted(events, key=lambda e: (e.start_ms, e.kind)):
        y = top + lanes.index(e.environment) * lane_h
        x0, x1 = sx(e.start_ms), max(sx(e.end_ms), sx(e.start_ms) + 3)
        bar_y = y + 22
        # Reads label above their bar, writes below: in one lane a read is followed by its write.
        above = e.kind == "read" if e.above is None else e.above
        text_y = bar_y - 5 if above else bar_y + 27
        anchor, tx = "start", x0
        if x0 + 6.2 * len(e.label) > left + pw:
            anchor, tx = "end", x1
        out.append(
            f'<g class="event {e.kind} {e.css}"><title>{esc(e.detail)}</title>'
            f'<rect class="bar" x="{num(x0)}" y="{bar_y}" width="{num(x1 - x0)}" height="14" rx="3"/>'
            f'<text class="event-label" x="{num(tx)}" y="{text_y}" text-anchor="{anchor}">'
            f"{esc(e.label)}</text></g>"
        )
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
