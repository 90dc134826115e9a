"""The race timeline keeps every mark at its time and gives every label a box of its own:
no two labels overlap, whatever the number of marks close together or the labels' lengths;
a label cut to the room it has keeps its whole text in its tooltip."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loadtest.reports.html.charts import TEXT_CHAR_PX, TEXT_HEIGHT_PX
from loadtest.reports.html.timeline import TimelineEvent, svg_timeline

Box = tuple[float, float, float, float]
"""left, top, right, bottom (in pixels)."""

_EVENT = re.compile(
    r'<g class="event \w+ [\w-]+"><title>([^<]*)</title>'
    r'<rect class="bar" x="([\d.-]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"[^>]*/>'
    r'<text class="event-label" x="([\d.]+)" y="([\d.]+)" text-anchor="(\w+)"'
    r'(?: clip-path="url\(#([^)]+)\)")?>([^<]*)</text></g>'
)
_LANE = re.compile(
    r'<rect class="lane(?: odd)?" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="([\d.]+)"/>'
)
_CLIP = re.compile(
    r'<clipPath id="([^"]+)"><rect x="([\d.-]+)" y="([\d.-]+)" width="([\d.]+)" '
    r'height="([\d.]+)"/></clipPath>'
)


@dataclass(frozen=True)
class Drawn:
    """One mark of the drawing as the SVG places it."""

    title: str
    bar: Box
    label: str
    box: Box
    """The label's box, from its anchor and the advance the layout assumes per character."""
    clip: Box | None


def _drawn(svg: str) -> list[Drawn]:
    clips = {
        name: (float(x), float(y), float(x) + float(w), float(y) + float(h))
        for name, x, y, w, h in _CLIP.findall(svg)
    }
    out = []
    for match in _EVENT.finditer(svg):
        title, bx, by, bw, bh, tx, ty, anchor, clip, raw = match.groups()
        label = html.unescape(raw)
        width = len(label) * TEXT_CHAR_PX["event-label"]
        x, y = float(tx), float(ty)
        left = x if anchor == "start" else x - width
        # The baseline is at y; a glyph rises about the font size and descends a quarter of it.
        size = TEXT_HEIGHT_PX["event-label"]
        out.append(
            Drawn(
                title=html.unescape(title),
                bar=(float(bx), float(by), float(bx) + float(bw), float(by) + float(bh)),
                label=label,
                box=(left, y - size, left + width, y + size / 4),
                clip=clips[clip] if clip else None,
            )
        )
    return out


def _lanes(svg: str) -> list[Box]:
    return [
        (float(x), float(y), float(x) + float(w), float(y) + float(h))
        for x, y, w, h in _LANE.findall(svg)
    ]


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(inner: Box, outer: Box, slack: float = 0.1) -> bool:
    """``inner`` within ``outer``, up to the rounding of coordinates written to 0.1 px."""
    return (
        outer[0] - slack <= inner[0]
        and inner[2] <= outer[2] + slack
        and outer[1] - slack <= inner[1]
        and inner[3] <= outer[3] + slack
    )


def _label(n: int, length: int) -> str:
    # Labels of one lane share their opening words, as a run's rejected writes do.
    return (f"TransactWriteItems.Put ✗ rejected — kept quantity={n} " + "W" * length)[: 20 + length]


def _events(count: int, lanes: int, label_len: int, spread_ms: float) -> list[TimelineEvent]:
    events = []
    for n in range(count):
        at = 1800.0 + spread_ms * n / max(count - 1, 1)
        kind = ("read", "write", "effect")[n % 3]
        events.append(
            TimelineEvent(
                kind=kind,
                environment=str(n % lanes),
                start_ms=at,
                end_ms=at + (0.4 if n % 2 else 0.0),
                css={"read": "read-absent", "write": "w-rejected", "effect": "effect"}[kind],
                label=_label(n, label_len),
                detail=f"mark {n} at {at:.1f} ms",
                above=True if kind == "effect" else None,
            )
        )
    # One mark far off, so the close ones share a few pixels of a long axis.
    events.append(
        TimelineEvent("write", "0", 500.0, 510.0, "w-accepted", "PutItem ✓ stored", "first")
    )
    return events


def _check(events: list[TimelineEvent]) -> list[Drawn]:
    """The drawing of ``events``, once every rule of its layout is checked."""
    svg = str(svg_timeline(events, title="outbox — order-00004"))
    drawn = _drawn(svg)
    assert len(drawn) == len(events)  # every mark is drawn, with its label
    lanes = _lanes(svg)
    lane_of: dict[str, int] = {}
    for i, a in enumerate(drawn):
        # Each label lies within the lane of its bar, and so within the plot.
        (lane,) = [n for n, lane in enumerate(lanes) if _inside(a.bar, lane)]
        assert _inside(a.box, lanes[lane]), (a.label, a.box, lanes[lane])
        assert a.clip is not None and _inside(a.box, a.clip), (a.label, a.box, a.clip)
        (event,) = [e for e in events if a.title.endswith(e.detail)]
        assert lane_of.setdefault(event.environment, lane) == lane
        for b in drawn[i + 1 :]:
            assert not _overlap(a.box, b.box), (a.label, a.box, b.label, b.box)
            # The clips hold even a label of wider glyphs than assumed to its own box.
            assert not _overlap(a.clip, b.clip or a.clip), (a.label, a.clip, b.label, b.clip)
    assert len(set(lane_of.values())) == len(lane_of)  # a lane per environment
    # The marks stay at their times: one scale maps every start to its bar's left edge.
    at = sorted((e.start_ms, d.bar[0]) for d in drawn for e in events if d.title.endswith(e.detail))
    (t0, x0), (t1, x1) = at[0], at[-1]
    for t, x in at:
        assert x == pytest.approx(x0 + (x1 - x0) * (t - t0) / (t1 - t0), abs=0.1), (t, x)
    return drawn


@pytest.mark.parametrize(
    ("count", "lanes", "label_len", "spread_ms"),
    [
        (2, 1, 40, 0.0),
        (13, 4, 60, 0.3),  # a run's rejected writes, a fraction of a millisecond apart
        (40, 2, 50, 5.0),
        (120, 3, 30, 2000.0),
        (30, 1, 400, 1.0),  # labels longer than the plot is wide
        (8, 8, 10, 0.0),
    ],
)
def test_no_two_labels_overlap_and_every_mark_keeps_its_time(
    count: int, lanes: int, label_len: int, spread_ms: float
) -> None:
    _check(_events(count, lanes, label_len, spread_ms))


@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),
            st.floats(0, 50, allow_nan=False),
            st.floats(0, 5, allow_nan=False),
            st.sampled_from(["read", "write", "effect"]),
            st.integers(1, 160),
        ),
        min_size=1,
        max_size=40,
    )
)
def test_any_marks_close_together_get_labels_that_do_not_overlap(
    marks: list[tuple[int, float, float, str, int]],
) -> None:
    events = [
        TimelineEvent(
            kind=kind,
            environment=str(env),
            start_ms=at,
            end_ms=at + duration,
            css={"read": "read-found", "write": "w-again", "effect": "effect"}[kind],
            label=_label(n, length),
            detail=f"mark {n}",
            above=True if kind == "effect" else None,
        )
        for n, (env, at, duration, kind, length) in enumerate(marks)
    ]
    events.append(TimelineEvent("write", "9", 60.0, 61.0, "w-accepted", "stored", "last"))
    _check(events)


def test_a_label_cut_to_its_room_keeps_its_whole_text_in_the_tooltip() -> None:
    (drawn,) = [d for d in _check(_events(1, 1, 400, 0.0)) if d.label != "PutItem ✓ stored"]
    assert drawn.label.endswith("…") and len(drawn.label) < 400
    assert drawn.title.startswith(_label(0, 400)) and drawn.title.endswith("mark 0 at 1800.0 ms")


def test_close_labels_take_more_rows_and_the_lane_grows_to_hold_them() -> None:
    one = str(svg_timeline(_events(1, 1, 40, 0.0), title="t"))
    many = str(svg_timeline(_events(10, 1, 40, 0.0), title="t"))
    (lane_one,) = _lanes(one)
    (lane_many,) = _lanes(many)
    assert lane_many[3] - lane_many[1] > lane_one[3] - lane_one[1]
    rows = {d.box[1] for d in _drawn(many)}
    assert len(rows) >= 10  # eleven labels, ten of them at one time: a row each
