"""Sweep heatmaps and grid tables, from a sweep report made of the sample's runs."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from loadtest.reports.html.heatmap import grid_tables, html_section, metric_named, panels
from loadtest.reports.html.page import render_html
from loadtest.reports.text.render import render

SAMPLE = Path(__file__).with_name("sample_report.json")


def _sweep() -> dict[str, Any]:
    """A 2 x 2 grid (batch size x visibility timeout) of the sample's two variants."""
    sample = json.loads(SAMPLE.read_text())
    runs = []
    n = 0
    for batch in (1, 10):
        for visibility in (2, 30):
            for base in sample["runs"]:
                run = copy.deepcopy(base)
                run["cell"] = {"batch_size": batch, "visibility_timeout_s": visibility}
                run["counts"]["redeliveries"] = n
                run["cost"] = {"per_million_usd": 1.0 + n / 4}
                run["verdict"] = "fail" if n == 5 else "pass"
                runs.append(run)
                n += 1
    return {**sample, "runs": runs}


def test_panels_lay_the_grid_out_per_variant() -> None:
    report = _sweep()
    shown = panels(report, metric_named("redeliveries"))
    assert [p.variant for p in shown] == ["read-then-write", "conditional"]
    racy = shown[0]
    assert (racy.x_axis, racy.x_values) == ("batch_size", ("1", "10"))
    assert (racy.y_axis, racy.y_values) == ("visibility_timeout_s", ("2", "30"))
    # Runs alternate variants: the racy ones are 0, 2, 4, 6.
    assert {k: (c.run_index, c.value) for k, c in racy.cells.items()} == {
        ("2", "1"): (0, 0),
        ("30", "1"): (2, 2),
        ("2", "10"): (4, 4),
        ("30", "10"): (6, 6),
    }
    assert shown[1].cells[("2", "10")].failing  # run 5


def test_html_section_writes_values_marks_failures_and_links_each_cell() -> None:
    html = str(html_section(_sweep(), "cost"))
    first = re.findall(r'<h3 id="heat-([a-z0-9_]+)"', html)
    assert first == ["cost", "duplicate_writes", "redeliveries", "e2e_p99"]
    # Every run is linked from every metric's heatmap.
    for n in range(8):
        assert html.count(f'href="#run-{n}"') == 4
    assert html.count('class="heat-cell failing"') == 4  # run 5, once per metric
    assert "$2.75" in html and "✗ fail" in html  # run 7's cost, written in


def test_page_has_the_sweep_and_the_run_anchors_it_links_to() -> None:
    page = render_html(_sweep())
    assert '<section id="sweep">' in page and 'href="#sweep"' in page
    for n in range(8):
        assert f'id="run-{n}"' in page
    # A report that is not a sweep has no sweep section.
    assert '<section id="sweep">' not in render_html(json.loads(SAMPLE.read_text()))


def test_terminal_grid_tables_put_the_chosen_metric_first() -> None:
    report = _sweep()
    tables = grid_tables(report, "e2e_p99")
    assert [str(t.title).split(" · ")[0] for t in tables] == [
        "End-to-end p99",
        "Duplicate writes",
        "Redeliveries",
        "Cost per million messages (USD)",
    ]
    console = Console(width=160, record=True)
    console.print(render({**report, "sweep_metric": "cost"}))
    text = console.export_text()
    assert text.index("Cost per million messages") < text.index("Duplicate writes")
    assert "✗ $2.25" in text  # run 5 failed: its cell is marked
    assert grid_tables(json.loads(SAMPLE.read_text())) == []


def test_unknown_metric_names_the_choices() -> None:
    assert metric_named("cost.per_million_usd").name == "cost"
    with pytest.raises(ValueError, match="duplicate_writes, redeliveries, e2e_p99, cost"):
        metric_named("latency")
