"""Text renderings of a report for CI: a Markdown summary, JUnit XML and .hgrm files.

Owns ``--markdown`` (GitHub-flavoured, fit for ``$GITHUB_STEP_SUMMARY`` or a
pull-request comment), ``--junit`` (one test suite per variant, one test
case per threshold plus the default verdict) and ``--hgrm`` (a percentile
distribution per run and latency). Pure: each function takes a
report model (``loadtest.reports.model``; its JSON is read into one) and returns
a string; writing it to a file is the CLI's job.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from typing import Any

from loadtest.errors import ThresholdError
from loadtest.model.checker import FLAGGED_WHEN_NONZERO
from loadtest.model.figures.metrics import decode, hgrm
from loadtest.model.figures.metrics import format_us as format_us
from loadtest.model.figures.thresholds import LATENCIES, MetricKind, parse_threshold
from loadtest.reports.finding import sink_line
from loadtest.reports.model import ReportModel, RunModel, ThresholdResult, as_model
from loadtest.reports.text.repeat_view import repeat_markdown

DEFAULT_VERDICT_CASE = "default verdict"


def _number(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.2f}"
    return f"{int(value)}" if isinstance(value, int | float) else str(value)


def format_observed(result: ThresholdResult, run: RunModel) -> str:
    """A threshold result's observed value in the unit its expression uses."""
    observed = result.observed
    if observed is None:
        return "no data"
    # The expression says what the number is: a latency is stored in microseconds.
    latencies = {*LATENCIES, *run.latency_us}
    try:
        threshold = parse_threshold(result.expr, latencies=latencies)
    except ThresholdError:
        return _number(observed)
    if threshold.kind is MetricKind.LATENCY_US:
        return format_us(observed)
    if threshold.kind is MetricKind.SECONDS:
        return f"{_number(observed)} s"
    if threshold.kind is MetricKind.USD:
        return f"${observed:.4g}"
    return _number(observed)


def _latency(name: str, stat: str) -> Callable[[RunModel], str]:
    def read(run: RunModel) -> str:
        value = run.latency_us.get(name, {}).get(stat)
        return "–" if value is None else format_us(value)

    return read


def _count(name: str) -> Callable[[RunModel], str]:
    def read(run: RunModel) -> str:
        value = run.counts.get(name)
        text = _number(value)
        # Make a correctness problem stand out in a table of numbers.
        if name in FLAGGED_WHEN_NONZERO and isinstance(value, int) and value > 0:
            return f"**{text}**"
        return text

    return read


def overlap_text(run: RunModel) -> str:
    """Race exposure as ``ids (pairs)``: ids with overlapping deliveries, and the pairs."""
    counts = run.counts
    ids, pairs = counts.get("overlapping_ids"), counts.get("overlapping_deliveries")
    if ids is None:
        return "–"  # a report older than the race exposure
    return f"{_number(ids)} ({_number(pairs)} pairs)"


def _usd(value: Any) -> str:
    return "–" if value is None else f"${value:,.2f}"


COLUMNS: tuple[tuple[str, Callable[[RunModel], str]], ...] = (
    ("sent", _count("messages_sent")),
    ("deliveries", _count("deliveries")),
    ("redeliveries", _count("redeliveries")),
    ("overlapping ids", overlap_text),
    ("duplicate writes", _count("duplicate_writes")),
    ("conflicting writes", _count("conflicting_writes")),
    ("lost outcomes", _count("lost_outcomes")),
    ("dead-lettered", _count("dead_lettered")),
    ("end-to-end p50", _latency("end_to_end", "p50")),
    ("end-to-end p99", _latency("end_to_end", "p99")),
    ("handler p99", _latency("handler", "p99")),
    ("write p99", _latency("write", "p99")),
    ("msg/s", lambda run: _number(run.throughput.get("messages_per_s"))),
    ("$ per M msgs", lambda run: _usd(run.cost.get("per_million_usd"))),
)
"""The summary table's columns after variant and verdict."""


def _cell(text: str) -> str:
    # A pipe ends a GFM table cell; a newline ends the row.
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    body = _cell(text)
    return f"`` {body} ``" if "`" in body else f"`{body}`"


_VERDICT_CELLS = {"pass": "✅ pass", "inconclusive": "⚠️ inconclusive"}


def _verdict(run: RunModel) -> str:
    """An inconclusive run proved nothing either way: it is named, never shown as a fail."""
    return _VERDICT_CELLS.get(run.verdict, "❌ fail")


def markdown_summary(report: ReportModel | Mapping[str, Any]) -> str:
    """GitHub-flavoured Markdown: heading, variants x key figures, failures, reproduce command."""
    report = as_model(report)
    runs = report.runs
    passed = sum(1 for run in runs if run.passed)
    lines = [
        f"## loadtest: {report.name} (seed {report.seed})",
        "",
        f"{passed} of {len(runs)} variant(s) passed.",
        "",
        "| variant | verdict | " + " | ".join(label for label, _ in COLUMNS) + " |",
        "|" + "---|" * 2 + "".join("---:|" for _ in COLUMNS),
    ]
    for run in runs:
        cells = [_code(run.variant), _verdict(run)]
        cells += [_cell(read(run)) for _, read in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")

    sinks = [(run, entry) for run in runs for entry in run.effects or ()]
    if sinks:
        lines += ["", "### Effects beyond the table", ""]
        lines += [f"- {_code(run.variant)}: {_cell(sink_line(entry))}" for run, entry in sinks]

    faulted = [(run, run.faults) for run in runs if run.faults != "none"]
    if faulted:
        lines += ["", "### Faults injected (opt-in)", ""]
        lines += [f"- {_code(run.variant)}: {faults}" for run, faults in faulted]

    failed = [(run, result) for run in runs for result in run.thresholds if not result.ok]
    if failed:
        lines += ["", "### Failed thresholds", ""]
        for run, result in failed:
            lines.append(
                f"- {_code(run.variant)}: {_code(result.expr)} "
                f"— observed {format_observed(result, run)}"
            )
    reasons = [(run, reason) for run in runs for reason in run.reasons]
    if reasons:
        lines += ["", "### Default verdict failures", ""]
        lines += [f"- {_code(run.variant)}: {reason}" for run, reason in reasons]
    unproven = [(run, reason) for run in runs for reason in run.inconclusive]
    if unproven:
        lines += ["", "### Inconclusive (the run could not prove either way)", ""]
        lines += [f"- {_code(run.variant)}: {reason}" for run, reason in unproven]
    relaxed = [(run, reason) for run in runs for reason in run.relaxed_reasons or ()]
    if relaxed:
        lines += ["", "### Allowed by the scenario (expected in this demonstration)", ""]
        lines += [f"- {_code(run.variant)}: {reason}" for run, reason in relaxed]
    missed = [
        (run, warning)
        for run in runs
        for warning in run.warnings
        if "rate was NOT reached" in warning
    ]
    if missed:
        lines += ["", "### Requested rate not reached", ""]
        lines += [f"- {_code(run.variant)}: {warning}" for run, warning in missed]
    lines += repeat_markdown(report)
    if report.command:
        lines += ["", "Reproduce:", "", "```sh", str(report.command), "```"]
    return "\n".join(lines) + "\n"


def junit_xml(report: ReportModel | Mapping[str, Any]) -> str:
    """JUnit XML: a ``loadtest.SCENARIO.VARIANT`` suite per run, a case per threshold result.

    Each suite also has a ``default verdict`` case; it fails with the run's
    reasons, or — for a failed run whose reasons and thresholds are all clear —
    with the verdict itself, so a failed run never shows as a green suite.
    """
    report = as_model(report)
    scenario = report.name
    root = ET.Element("testsuites", name=f"loadtest.{scenario}")
    total_tests = total_failures = 0
    for run in report.runs:
        suite_name = f"loadtest.{scenario}.{run.variant}"
        results = run.thresholds
        reasons = [str(r) for r in run.reasons]
        verdict_failed = not run.passed
        thresholds_failed = any(not r.ok for r in results)
        default_fails = bool(reasons) or (verdict_failed and not thresholds_failed)

        suite = ET.SubElement(root, "testsuite", name=suite_name)
        properties = ET.SubElement(suite, "properties")
        for name, value in (
            ("seed", report.seed),
            ("variant", run.variant),
            ("handler", run.handler),
            ("verdict", run.verdict),
        ):
            ET.SubElement(properties, "property", name=name, value=str(value))

        failures = 0
        case = ET.SubElement(suite, "testcase", classname=suite_name, name=DEFAULT_VERDICT_CASE)
        if default_fails:
            failures += 1
            message = "; ".join(reasons) if reasons else f"verdict {run.verdict}"
            failure = ET.SubElement(case, "failure", message=message, type="verdict")
            failure.text = "\n".join(reasons) if reasons else message
        for result in results:
            expr = result.expr
            case = ET.SubElement(suite, "testcase", classname=suite_name, name=expr)
            if not result.ok:
                failures += 1
                observed = format_observed(result, run)
                ET.SubElement(
                    case, "failure", message=f"{expr}: observed {observed}", type="threshold"
                )
        tests = 1 + len(results)
        suite.set("tests", str(tests))
        suite.set("failures", str(failures))
        suite.set("errors", "0")
        suite.set("skipped", "0")
        duration_s = run.throughput.get("duration_s")
        if isinstance(duration_s, int | float):
            suite.set("time", f"{duration_s:.3f}")
        total_tests += tests
        total_failures += failures
    root.set("tests", str(total_tests))
    root.set("failures", str(total_failures))
    root.set("errors", "0")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def hgrm_files(report: ReportModel | Mapping[str, Any]) -> dict[str, str]:
    """``--hgrm``: ``{file name: .hgrm text}`` for every variant run and latency with samples."""
    files: dict[str, str] = {}
    for index, run in enumerate(as_model(report).runs):
        label = _safe(run.variant)
        if run.cell:
            label += "-" + "-".join(f"{k}{v}" for k, v in run.cell.items())
        for name, encoded in run.latency_hdr.items():
            histogram = decode(encoded)
            if histogram.get_total_count():
                files[f"{index:02d}-{label}-{name}.hgrm"] = hgrm(histogram)
    return files


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[-60:]
