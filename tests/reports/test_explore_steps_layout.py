"""The explored schedule's drawing places every text in a box of its own: no two overlap,
whatever the number of steps, deliveries or label lengths."""

from __future__ import annotations

import html
import itertools
import re
from typing import Any

import pytest

from loadtest.reports.html.charts import TEXT_CHAR_PX, TEXT_HEIGHT_PX
from loadtest.reports.html.steps import ROW_PX, explore_timeline

Box = tuple[float, float, float, float]
"""left, top, right, bottom (in pixels)."""

_TEXT = re.compile(r'<text class="([^"]+)" x="([\d.]+)" y="([\d.]+)"([^>]*)>([^<]*)</text>')


_CLIP = re.compile(
    r'<clipPath id="([^"]+)"><rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" '
    r'height="([\d.]+)"/></clipPath>'
)


def _clips(svg: str) -> dict[str, Box]:
    return {
        name: (float(x), float(y), float(x) + float(w), float(y) + float(h))
        for name, x, y, w, h in _CLIP.findall(svg)
    }


def _boxes(svg: str) -> list[tuple[str, Box]]:
    """Each text the SVG draws, with the box its coordinates, anchor and class give it,
    cut to the clip it is drawn in (every text has one)."""
    clips = _clips(svg)
    out = []
    for css, x_text, y_text, rest, raw in _TEXT.findall(svg):
        text = html.unescape(raw)
        x, y = float(x_text), float(y_text)
        width = len(text) * TEXT_CHAR_PX[css]
        anchor = re.search(r'text-anchor="(\w+)"', rest)
        left = {"start": x, "middle": x - width / 2, "end": x - width}[
            anchor.group(1) if anchor else "start"
        ]
        # The baseline is at y; a glyph rises about the font size and descends a quarter of it.
        size = TEXT_HEIGHT_PX[css]
        clip = re.search(r'clip-path="url\(#([^)]+)\)"', rest)
        assert clip is not None, text
        c = clips[clip.group(1)]
        box = (left, y - size, left + width, y + size / 4)
        out.append((text, (max(box[0], c[0]), box[1], min(box[2], c[2]), box[3])))
    return out


def _estimated(svg: str) -> list[Box]:
    """Each text's box as the estimate of its characters' advance gives it, unclipped."""
    out = []
    for css, x_text, y_text, rest, raw in _TEXT.findall(svg):
        width = len(html.unescape(raw)) * TEXT_CHAR_PX[css]
        anchor = re.search(r'text-anchor="(\w+)"', rest)
        x = float(x_text)
        left = {"start": x, "middle": x - width / 2, "end": x - width}[
            anchor.group(1) if anchor else "start"
        ]
        out.append((left, float(y_text) - TEXT_HEIGHT_PX[css], left + width, float(y_text)))
    return out


def _overlap(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _steps(count: int, deliveries: int, what_len: int) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = []
    for n in range(1, count + 1):
        copy = 1 + n % deliveries
        steps.append(
            {
                "number": n,
                "delivery": f"{copy}.{1 + n % 3}" if n % 5 == 0 else str(copy),
                "environment": copy + deliveries * (n % 2),
                "at_ms": 30000 * (n % 4),
                "what": ("PutItem id=dedup-order " + "W" * what_len)[: 23 + what_len],
                "answer": "accepted" if n % 2 else "absent",
                "item_before": {"id": "dedup-order"} if n % 3 else None,
                "item_after": {"id": "dedup-order"},
                "fault": "crash" if n % 7 == 0 else None,
            }
        )
    return steps


@pytest.mark.parametrize(
    ("count", "deliveries", "what_len"),
    [(3, 1, 0), (10, 2, 40), (60, 4, 200), (200, 8, 5), (25, 12, 80)],
)
def test_no_two_texts_overlap_and_all_fit_in_the_drawing(
    count: int, deliveries: int, what_len: int
) -> None:
    svg = str(explore_timeline(_steps(count, deliveries, what_len)))
    width = float(re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    height = float(re.search(r'viewBox="0 0 [\d.]+ ([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    boxes = _boxes(svg)
    labels = [t for t, _ in boxes if re.match(r"\d+\. ", t)]
    assert len(labels) == count  # every step has its label
    lane_names = re.findall(r'<text class="lane-label"', svg)
    assert len(lane_names) == len(
        {(s["environment"], s["delivery"]) for s in _steps(count, deliveries, what_len)}
    )
    for i, (text_a, a) in enumerate(boxes):
        assert a[0] >= 0 and a[2] <= width and a[1] >= 0 and a[3] <= height, text_a
        for text_b, b in boxes[i + 1 :]:
            assert not _overlap(a, b), (text_a, a, text_b, b)
    # The clips are a guarantee; the cut to fit is what keeps the ellipsis in sight.
    estimated = _estimated(svg)
    for i, a in enumerate(estimated):
        for b in estimated[i + 1 :]:
            assert not _overlap(a, b), (a, b)


def test_the_columns_clips_do_not_overlap_so_no_glyph_width_can_make_labels_meet() -> None:
    svg = str(explore_timeline(_steps(30, 5, 150)))
    clips = list(_clips(svg).values())
    assert len(clips) == 2 + len(re.findall(r'<text class="lane-label"', svg))
    for i, a in enumerate(clips):
        for b in clips[i + 1 :]:
            assert not _overlap(a, b), (a, b)


def test_a_cut_label_keeps_the_whole_step_in_its_tooltip() -> None:
    steps = _steps(1, 1, 300)
    svg = str(explore_timeline(steps))
    label = next(t for t, _ in _boxes(svg) if t.startswith("1. "))
    assert label.endswith("…") and len(label) < 300
    title = re.search(r'<g class="event [^"]+"><title>([^<]*)</title>', svg)
    assert title is not None and steps[0]["what"] in html.unescape(title.group(1))


def test_each_step_has_a_row_of_its_own_in_the_schedules_order() -> None:
    svg = str(explore_timeline(_steps(12, 3, 10)))
    ys = [b[3] for t, b in _boxes(svg) if re.match(r"\d+\. ", t)]
    assert all(later - earlier == ROW_PX for earlier, later in itertools.pairwise(ys))
