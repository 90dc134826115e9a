"""Reports of a run with effects beyond the table: the JSON's counts and ``effects``, the
terminal's lines per sink, Markdown, JUnit, the HTML table, diff and the library."""

from __future__ import annotations

import dataclasses
import io
import json
from typing import Any

from rich.console import Console

from loadtest.aws.clients import BackendKind, Target
from loadtest.engine import RunResult
from loadtest.model.checker import EFFECT_COUNT_NAMES
from loadtest.model.history.log import (
    EffectKind,
    EffectRecord,
    EndState,
    History,
    SinkContents,
    SinkMessage,
)
from loadtest.model.scenario.loading import load_scenario
from loadtest.reports.diff import diff_reports
from loadtest.reports.html.page import render_html
from loadtest.reports.library import Report
from loadtest.reports.model import ReportModel, RunModel
from loadtest.reports.report import build_report
from loadtest.reports.text.formats import junit_xml, markdown_summary
from loadtest.reports.text.render import render
from tests.model.builders import lab_history
from tests.reports.test_report import variant_run

TOPIC = "arn:aws:sns:us-east-1:000000000000:orders"


def published() -> tuple[History, EndState]:
    """The lab's run whose handler publishes before its guard: every delivery publishes."""
    history, end = lab_history()
    invocations = []
    for inv in history.invocations:
        (rec,) = inv.records
        body = json.dumps({"orderId": rec.business_id})
        sent = EffectRecord("SNS.Publish", EffectKind.TOPIC, TOPIC, body, True, 0, 1)
        invocations.append(dataclasses.replace(inv, effects=(sent,)))
    history.invocations = invocations
    held = tuple(SinkMessage(e.payload) for inv in invocations for e in inv.effects)
    sink = SinkContents("orders", EffectKind.TOPIC, TOPIC, held)
    return history, dataclasses.replace(end, sinks=(sink,))


def report_of(with_effects: bool) -> dict[str, Any]:
    history, end = published() if with_effects else lab_history()
    result = RunResult(
        scenario=load_scenario("seed-lab"),
        target=Target(BackendKind.EMBEDDED, "http://127.0.0.1:5000", "us-east-1"),
        runs=[variant_run(history, end)],
    )
    return build_report(result, command="loadtest run seed-lab")


def terminal(report: dict[str, Any]) -> str:
    console = Console(file=io.StringIO(), width=160, color_system=None, record=True)
    console.print(render(report))
    return console.export_text()


def test_the_json_carries_the_effect_counts_and_each_sink() -> None:
    report = report_of(True)
    (run,) = report["runs"]
    counts = run["counts"]
    assert {name: counts[name] for name in EFFECT_COUNT_NAMES} == {
        "effects_sent": 4,
        "effects_delivered": 4,
        "duplicate_effects": 2,
        "conflicting_effects": 0,
        "lost_effects": 0,
    }
    assert list(run)[list(run).index("counts") + 1] == "effects"
    (sink,) = run["effects"]
    assert {k: sink[k] for k in ("sink", "kind", "sent", "delivered", "duplicate", "lost")} == {
        "sink": "orders",
        "kind": "topic",
        "sent": 4,
        "delivered": 4,
        "duplicate": 2,
        "lost": 0,
    }
    (witness,) = sink["witnesses"]
    assert witness["text"] == "dedup-order published 3 times to orders"
    assert [d["request_id"] for d in witness["deliveries"]] == ["r-1", "r-2", "r-3"]
    assert run["verdict"] == "fail"
    assert "2 duplicate effect(s): dedup-order published 3 times to orders" in run["reasons"]
    # Read back, the report writes the same bytes.
    again = ReportModel.from_json(json.loads(json.dumps(report))).to_json()
    assert json.dumps(again) == json.dumps(report)


def test_a_run_without_effects_has_no_effect_keys() -> None:
    (run,) = report_of(False)["runs"]
    assert "effects" not in run
    assert not set(EFFECT_COUNT_NAMES) & set(run["counts"])


def test_the_terminal_lists_each_sink_under_the_counts() -> None:
    text = terminal(report_of(True))
    assert (
        "conditional: effects  orders (topic): sent 4, delivered 4, duplicate 2, "
        "conflicting 0, lost 0"
    ) in text
    assert "duplicate effects" in text
    assert "effects: 2 duplicates, 0 lost, 0 conflicting" in text
    plain = terminal(report_of(False))
    assert "effects" not in plain


def test_markdown_and_junit_name_the_effects() -> None:
    report = report_of(True)
    markdown = markdown_summary(report)
    assert "### Effects beyond the table" in markdown
    assert "- `conditional`: orders (topic): sent 4, delivered 4, duplicate 2" in markdown
    junit = junit_xml(report)
    assert "2 duplicate effect(s): dedup-order published 3 times to orders" in junit
    assert "Effects beyond the table" not in markdown_summary(report_of(False))


def test_the_html_page_has_an_effects_table() -> None:
    page = render_html(report_of(True))
    assert '<section id="effects">' in page
    assert "dedup-order published 3 times to orders" in page
    assert ">duplicate_effects<" in page
    assert '<section id="effects">' not in render_html(report_of(False))


def test_diff_compares_effect_counts_only_where_a_run_has_them() -> None:
    with_effects = diff_reports(report_of(True), report_of(True), 0.1)
    metrics = {row.metric for row in with_effects.rows}
    assert "counts.duplicate_effects" in metrics
    without = diff_reports(report_of(False), report_of(False), 0.1)
    assert not {row.metric for row in without.rows if "effect" in row.metric}


def test_the_library_carries_the_counts_by_name() -> None:
    (run,) = Report(report_of(True)).runs
    assert run.counts.duplicate_effects == 2
    (plain,) = Report(report_of(False)).runs
    assert plain.counts.duplicate_effects is None
    assert "effects_sent" not in repr(plain.counts)
    assert RunModel.from_json(report_of(False)["runs"][0]).effects is None


def test_repeated_runs_state_the_effect_counts_only_when_runs_have_them() -> None:
    from loadtest.model.search.repeats import variant_statistics

    effected = [report_of(True)["runs"][0], report_of(True)["runs"][0]]
    stats = variant_statistics(effected)
    assert stats["counts"]["duplicate_effects"]["median"] == 2
    (anomaly,) = [a for a in stats["anomalies"] if a["count"] == "duplicate_effects"]
    assert anomaly["runs_with"] == 2
    plain = variant_statistics([report_of(False)["runs"][0]] * 2)
    assert "duplicate_effects" not in plain["counts"]
    assert not [a for a in plain["anomalies"] if "effect" in a["count"]]


def test_a_sweep_grids_the_effects_of_runs_that_have_them() -> None:
    from loadtest.reports.html.heatmap import metric_named, ordered

    assert [m.name for m in ordered(None)][-1] == "cost"
    assert [m.name for m in ordered(None, effects=True)][-2:] == [
        "duplicate_effects",
        "lost_effects",
    ]
    assert metric_named("lost_effects").title == "Lost effects"


def test_the_race_timeline_marks_the_witnessed_effects() -> None:
    report = report_of(True)
    (run,) = report["runs"]
    (witness,) = run["effects"][0]["witnesses"]
    assert [(d["environment"], d["operation"]) for d in witness["deliveries"]] == [
        (0, "SNS.Publish")
    ] * 3
    page = render_html(report)
    assert page.count('class="event effect effect"') == 3
    assert "SNS.Publish → orders" in page
    assert 'class="key effect"' not in render_html(report_of(False))


def _effect_call_rows(page: str) -> list[list[str]]:
    """The cells of each row of the decisions view's effects sub-table, as text."""
    import re

    (table,) = re.findall(r'<table class="effect-calls">(.*?)</table>', page, re.S)
    body = table.split("<tbody>", 1)[1]
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row)]
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)
    ]


def test_the_decisions_view_lists_each_witness_effect_call_by_its_delivery() -> None:
    report = report_of(True)
    (run,) = report["runs"]
    (sink,) = run["effects"]
    # A lost effect as the checker words one: the message's deliveries, none of which sent.
    sink["witnesses"].append(
        {
            "anomaly": "lost",
            "business_id": "other-order",
            "text": "other-order never published to orders (message m-4 acknowledged)",
            "deliveries": [
                {
                    "request_id": "r-4",
                    "message_id": "m-4",
                    "receive_count": 1,
                    "outcome": "success",
                    "environment": 0,
                    "at_ms": 0.0,
                }
            ],
            "held": [],
        }
    )
    page = render_html(report)
    rows = _effect_call_rows(page)
    deliveries = [d for w in sink["witnesses"] for d in w["deliveries"]]
    assert len(rows) == len(deliveries) == 4
    # Each row: anomaly, business id, sink, operation, the sink's answer, ..., the request,
    # and the numbers of that delivery's write decisions in the table above.
    numbers = {
        (w["request_id"], w["business_id"]): f"#{i + 1}"
        for i, w in enumerate(run["write_decisions"])
    }
    for row, d in zip(rows, deliveries, strict=True):
        anomaly, business_id = row[0], row[1]
        assert row[2] == "orders topic"
        assert row[7] == d["request_id"] and row[8] == d["message_id"]
        assert row[11] == numbers[(d["request_id"], business_id)]
        if anomaly == "duplicate":
            assert (business_id, row[3], row[4]) == ("dedup-order", "SNS.Publish", "accepted")
        else:
            assert (anomaly, business_id, row[3], row[4]) == (
                "lost",
                "other-order",
                "—",
                "none sent",
            )
    assert [row[11] for row in rows] == ["#1", "#2", "#3", "#4"]
    # The sub-table sits in the write decisions section, under the run's writes.
    writes = page.split('<section id="writes">', 1)[1].split("</section>", 1)[0]
    assert '<table class="effect-calls">' in writes
    assert writes.index('<table class="writes"') < writes.index('<table class="effect-calls">')


def test_the_decisions_view_has_no_effects_sub_table_without_witnesses() -> None:
    assert 'class="effect-calls"' not in render_html(report_of(False))
    report = report_of(True)
    for sink in report["runs"][0]["effects"]:
        sink["witnesses"] = []
    assert 'class="effect-calls"' not in render_html(report)


def test_a_sweep_table_shows_the_effect_counts_only_when_runs_have_them() -> None:
    from loadtest.reports.text.render import sweep_table

    def table(with_effects: bool) -> str:
        report = report_of(with_effects)
        report["runs"] = [dict(report["runs"][0], cell={"batch_size": n}) for n in (1, 10)]
        console = Console(file=io.StringIO(), width=400, color_system=None, record=True)
        console.print(sweep_table(ReportModel.from_json(report)))
        return console.export_text()

    effected = table(True)
    header = next(line for line in effected.splitlines() if "batch_size" in line)
    assert "duplicate effects" in header and "lost effects" in header
    rows = [line for line in effected.splitlines() if "│" in line and "batch_size" not in line]
    cells = [[c.strip() for c in row.strip("│ ").split("│")] for row in rows]
    columns = [c.strip() for c in header.strip("┃ ").split("┃")]
    assert [row[columns.index("duplicate effects")] for row in cells] == ["2", "2"]
    assert [row[columns.index("lost effects")] for row in cells] == ["0", "0"]
    assert "effects" not in table(False)


def _why(page: str) -> str:
    """The Summary's "why" cell of the page's one run."""
    import re

    row = re.search(r"<tr><td>why</td><td>(.*?)</td></tr>", page, re.S)
    assert row is not None
    return row.group(1)


def test_a_runs_notes_are_not_shown_as_failures_whatever_its_verdict() -> None:
    report = report_of(False)
    (run,) = report["runs"]
    note = "sink orders.fifo deduplicated 1 of 2 accepted send(s) itself"
    notes = f'<ul class="reasons notes" title="notes: they do not fail the run"><li>{note}</li>'
    run["verdict"], run["notes"] = "pass", [note]
    assert notes in _why(render_html(report))
    run["verdict"], run["reasons"] = "fail", ["1 duplicate write(s): an outcome was written again"]
    why = _why(render_html(report))
    # The failure in the failures' list, the note only in its own muted one.
    assert '<ul class="reasons"><li>1 duplicate write(s)' in why and notes in why
    assert why.count(note) == 1
