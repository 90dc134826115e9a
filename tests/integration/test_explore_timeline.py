"""The HTML page draws an explored counterexample in the race timeline, step by step."""

from __future__ import annotations

import re
from typing import Any

import loadtest
from loadtest.reports.html.steps import explore_timeline


def _events(svg: str) -> list[tuple[str, str]]:
    """Each drawn step: its classes and its label, in the page's order."""
    return [
        (classes, label)
        for classes, label in re.findall(
            r'<g class="event ([^"]+)">.*?<text class="event-label"[^>]*>([^<]*)</text></g>', svg
        )
    ]


def test_the_race_counterexample_is_drawn_in_the_timeline(backend_url: str) -> None:
    report = loadtest.explore("seed-lab", variant="read-then-write", endpoint_url=backend_url)
    steps = report.to_dict()["explore"]["counterexample"]["steps"]
    from loadtest.reports.html.page import render_html

    page = render_html(report.to_dict())
    block = page[page.index('id="explore-timeline"') :]
    svg = block[block.index("<svg") : block.index("</svg>")]
    events = _events(svg)
    # One bar per step, in the schedule's order, on one lane per environment.
    assert [label.split(".", 1)[0] for _, label in events] == [str(s["number"]) for s in steps]
    assert len(steps) == 8
    lanes = re.findall(r'<text class="lane-label"[^>]*>([^<]*)</text>', svg)
    assert len(lanes) == 2 and all(lane.startswith("env ") for lane in lanes)
    styles = [classes.split()[1] for classes, _ in events]
    # Two reads saw "absent", the first write stored the item, the second wrote it again.
    assert styles == [
        "step",
        "read-absent",
        "step",
        "read-absent",
        "w-accepted",
        "step",
        "w-again",
        "step",
    ]
    assert events[1][1] == "2. GetItem id=dedup-order → absent"
    assert "step of the schedule" in svg


def test_a_fault_is_marked_and_no_steps_draw_nothing() -> None:
    steps: list[dict[str, Any]] = [
        {"number": 1, "delivery": "1", "environment": 1, "at_ms": 0, "what": "invocation starts"},
        {
            "number": 2,
            "delivery": "1",
            "environment": 1,
            "at_ms": 0,
            "what": "PutItem id=o",
            "answer": "accepted",
            "item_before": None,
            "item_after": {"id": {"S": "o"}},
            "fault": "crash",
        },
    ]
    svg = str(explore_timeline(steps))
    events = _events(svg)
    assert events[1] == ("write w-accepted fault", "2. PutItem id=o → accepted ⚡crash")
    assert "fault: crash" in svg
    assert explore_timeline([]) is None
