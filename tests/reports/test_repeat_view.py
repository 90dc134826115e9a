"""A repeated report on the terminal, in Markdown and on the page: spreads and share sentences."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from loadtest.model.figures.thresholds import parse_threshold
from loadtest.model.search.repeats import repeat_summary
from loadtest.reports.html.page import render_html
from loadtest.reports.text.formats import markdown_summary
from loadtest.reports.text.render import render

SAMPLE = Path(__file__).with_name("sample_report.json")


def repeated_report() -> dict[str, Any]:
    report: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    runs = []
    for seed in (7, 8, 9, 10):
        for run in report["runs"]:
            copied = copy.deepcopy(run)
            copied["seed"] = seed
            copied["cell"] = {"seed": seed}
            if copied["variant"] == "read-then-write":
                copied["counts"]["duplicate_writes"] = seed - 7  # 0, 1, 2, 3
            runs.append(copied)
    report["runs"] = runs
    thresholds = [parse_threshold("conditional: duplicate_writes.runs_with == 0")]
    report["repeat"] = repeat_summary(runs, [7, 8, 9, 10], thresholds)
    return report


SENTENCE = (
    "3 of 4 runs showed a duplicate write: at 95% confidence it shows in 19% to 100% of such runs"
)


def test_the_terminal_shows_the_spread_and_the_sentences() -> None:
    console = Console(width=250, record=True, color_system=None)
    console.print(render(repeated_report()))
    text = console.export_text()
    assert "race-burst · 4 runs, seeds 7..10 · min / median / max" in text
    assert "race-burst runs · seed 7" in text
    assert f"read-then-write: {SENTENCE}" in text
    assert "0 / 1.5 / 3" in text  # duplicate writes across the four runs
    assert "✓ conditional: duplicate_writes.runs_with == 0 over the runs (observed 0)" in text


def test_markdown_and_the_page_show_the_same_sentences() -> None:
    report = repeated_report()
    markdown = markdown_summary(report)
    assert "### 4 runs (seeds 7..10): min / median / max" in markdown
    assert f"- `read-then-write`: {SENTENCE}" in markdown
    page = render_html(report)
    assert 'id="repeat"' in page and '<a href="#repeat">Runs</a>' in page
    assert SENTENCE in page
    assert '<td>duplicate writes</td><td class="num">0 / 1.5 / 3</td>' in page


def test_a_single_run_has_no_repeat_section() -> None:
    report = json.loads(SAMPLE.read_text(encoding="utf-8"))
    assert 'id="repeat"' not in render_html(report)
    assert "min / median / max" not in markdown_summary(report)
