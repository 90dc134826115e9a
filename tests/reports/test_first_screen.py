"""The first screen tells the story: the page and the terminal open with the finding.

What each variant wrote twice, lost or wrote in conflict comes first, with the
race of the first double-written id, before the settings, the counts table and
the warnings; warnings a scenario marks as intended read as neutral notes.
Uses the recorded ``compare race-burst`` report of ``test_html.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from rich.console import Console

from loadtest.model.advice.lint import INTENDED
from loadtest.reports.html.page import render_html
from loadtest.reports.text.render import render

SAMPLE = Path(__file__).with_name("sample_report.json")
VISIBILITY = "visibility timeout 30 s is below 6 x the function timeout (30 s)"
REDRIVE = "redrive maxReceiveCount 3 is below 5"


def _sample() -> dict[str, Any]:
    report: dict[str, Any] = json.loads(SAMPLE.read_text(encoding="utf-8"))
    return report


def _finding_items(html: str) -> dict[str, tuple[str, str]]:
    """variant -> (css level, text without tags) of each line of the finding list."""
    block = html.split('<ul class="finding" id="finding">', 1)[1].split("</ul>", 1)[0]
    items = re.findall(r'<li class="([a-z]+)" data-variant="([^"]+)">(.*?)</li>', block, re.S)
    return {variant: (level, re.sub(r"<[^>]+>", "", body)) for level, variant, body in items}


def _terminal(report: dict[str, Any]) -> list[str]:
    console = Console(width=200, record=True)
    console.print(render(report))
    return console.export_text().splitlines()


def test_the_page_opens_with_what_each_variant_wrote_twice() -> None:
    report = _sample()
    racy = report["runs"][0]
    ids = {f["business_id"] for f in racy["findings"]}
    duplicates = racy["counts"]["duplicate_writes"]
    assert len(ids) == 6 and duplicates == 12  # the recorded run's own counts

    html = render_html(report)
    items = _finding_items(html)

    assert list(items) == ["read-then-write", "conditional"]
    level, text = items["read-then-write"]
    assert level == "bad"
    assert text.startswith(
        f"read-then-write: {len(ids)} ids written more than once "
        f"({duplicates} duplicate writes), 0 lost, 0 conflicting — e.g. "
    )
    witness = re.search(r"e\.g\. (\S+) written (\d+) times, shown below", text)
    assert witness is not None
    by_id = {f["business_id"]: f for f in racy["findings"]}
    assert witness[1] in by_id and int(witness[2]) == by_id[witness[1]]["accepted_writes"]
    # The link leads to that id's timeline, the first the page draws.
    anchor = re.search(r'<a href="#(race-\d+)"><code>([^<]+)</code>', html)
    assert anchor is not None and anchor[2] == witness[1]
    assert f'<h3 id="{anchor[1]}">{witness[1]}</h3>' in html
    assert items["conditional"] == (
        "ok",
        "conditional: no id written twice, no outcome lost, none conflicting",
    )


def test_the_finding_and_the_race_come_before_settings_and_counts() -> None:
    html = render_html(_sample())
    order = [
        html.index('id="verdicts"'),
        html.index('id="finding"'),
        html.index('class="meta"'),
        html.index('id="command"'),
        html.index('<section id="race">'),
        html.index('<section id="summary">'),
        html.index('<section id="latency">'),
    ]
    assert order == sorted(order)
    toc = re.findall(r'<a href="#([a-z-]+)">', html.split('<nav class="toc">', 1)[1])
    assert toc[:2] == ["race", "summary"]


def test_a_failure_the_scenario_expects_is_marked_so_in_the_finding() -> None:
    report = _sample()
    racy = report["runs"][0]
    racy["verdict"], racy["relaxed_reasons"], racy["reasons"] = "pass", racy["reasons"], []

    level, text = _finding_items(render_html(report))["read-then-write"]
    lines = _terminal(report)

    assert level == "expected" and text.endswith("(expected by this scenario)")
    assert lines[0].startswith("read-then-write: 6 ids written more than once (12 duplicate")
    assert lines[0].endswith("(expected by this scenario)")


def test_lost_and_conflicting_outcomes_are_counted_in_the_finding() -> None:
    report = _sample()
    conditional = report["runs"][1]
    conditional["counts"]["lost_outcomes"] = 2
    conditional["counts"]["conflicting_writes"] = 1
    conditional["verdict"] = "fail"

    level, text = _finding_items(render_html(report))["conditional"]

    assert (level, text) == ("bad", "conditional: no id written twice, 2 lost, 1 conflicting")


def test_intended_lint_findings_are_neutral_notes_not_warnings() -> None:
    report = _sample()
    racy, conditional = report["runs"]
    racy["warnings"] = [f"{INTENDED}: {VISIBILITY}", f"{INTENDED}: {REDRIVE}", "slow backend"]
    conditional["warnings"] = ["moto is not atomic here", f"{INTENDED}: {VISIBILITY}"]
    conditional["warnings"].append("slow backend")

    html = render_html(report)
    warnings = html.split('id="warnings"', 1)[1].split("</div>", 1)[0]
    notes = html.split('<div class="alert note" id="intended">', 1)[1].split("</div>", 1)[0]

    assert 'class="alert warn" id="warnings"' in html
    # A text several variants share is listed once, under each of their names.
    assert re.findall(r"<li>(.*?)</li>", warnings) == [
        "read-then-write, conditional: slow backend",
        "conditional: moto is not atomic here",
    ]
    assert "Intended by the scenario" in notes and INTENDED not in notes
    assert re.findall(r"<li>(.*?)</li>", notes) == [
        f"read-then-write, conditional: {VISIBILITY}",
        f"read-then-write: {REDRIVE}",
    ]
    # Notes come after the finding and the command, not in the first lines.
    assert html.index('id="finding"') < html.index('id="command"') < html.index('id="intended"')

    lines = _terminal(report)
    assert f"· read-then-write: {INTENDED}: {VISIBILITY}" in lines
    assert f"· conditional: {INTENDED}: {VISIBILITY}" in lines
    assert "! conditional: moto is not atomic here" in lines
    assert not any(line.startswith("! ") and INTENDED in line for line in lines)


def test_no_intended_notes_block_without_intended_warnings() -> None:
    report = _sample()
    report["runs"][1]["warnings"] = ["moto is not atomic here"]

    html = render_html(report)

    assert 'id="warnings"' in html and 'id="intended"' not in html


def test_the_terminal_opens_with_the_finding_and_the_first_witness_race() -> None:
    report = _sample()
    racy = report["runs"][0]
    first = racy["findings"][0]

    lines = _terminal(report)
    title = next(i for i, line in enumerate(lines) if line.startswith("race-burst · seed"))

    assert lines[0] == "read-then-write: 6 ids written more than once (12 duplicate writes), " + (
        "0 lost, 0 conflicting"
    )
    assert lines[1].startswith(f"  e.g. {first['business_id']} ")
    assert lines[1].endswith(f"was written {first['accepted_writes']} times:")
    events = len(first["writes"]) + len(first.get("reads", []))
    assert all(" ms  env " in line for line in lines[2 : 2 + events])
    assert (
        lines[2 + events] == "conditional: no id written twice, no outcome lost, none conflicting"
    )
    assert 2 + events < title
    # The race is told once: not again after the table.
    assert sum("e.g. " in line for line in lines) == 1


def test_a_sweep_page_leads_with_its_grid_not_one_line_per_cell() -> None:
    report = _sample()
    for index, run in enumerate(report["runs"]):
        run["cell"] = {"batch_size": index + 1}

    html = render_html(report)

    assert 'id="finding"' not in html and '<section id="race">' in html


def test_a_run_failing_for_another_reason_says_why_in_the_finding() -> None:
    report = _sample()
    conditional = report["runs"][1]
    conditional["verdict"] = "fail"
    conditional["reasons"] = ["2 unexpected dead letter(s)", "3 handler error(s)"]

    level, text = _finding_items(render_html(report))["conditional"]

    assert level == "bad"
    assert text == (
        "conditional: no id written twice, no outcome lost, none conflicting; "
        "but 2 unexpected dead letter(s) (and 1 more)"
    )
