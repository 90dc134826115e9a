"""Terminal rendering of a report (the JSON document), side by side per variant.

Renders from the report model (``loadtest.reports.model``), not from live
objects, so ``loadtest report FILE.json`` shows exactly what the run showed. Returns rich renderables; the
CLI decides where they are printed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from loadtest.model.checker import EFFECT_COUNT_NAMES, FLAGGED_WHEN_NONZERO
from loadtest.model.figures.metrics import format_us
from loadtest.reports.finding import headlines, is_intended, sink_line
from loadtest.reports.model import ReportModel, RunModel, as_model
from loadtest.reports.text.formats import format_observed, overlap_text


def usd_per_million(run: RunModel) -> str:
    """The run's cost per million messages sent, e.g. ``$1.73`` (``-`` when unknown)."""
    value = run.cost.get("per_million_usd")
    return "-" if value is None else f"${value:,.2f}"


def billed_units(run: RunModel) -> str:
    """SQS requests, Lambda GB-s, DynamoDB write/read units, on one line."""
    units = run.cost.get("units")
    if not units:
        return "-"
    return (
        f"SQS {units['sqs_requests']} req · λ {units['lambda_gb_s']:.3f} GB-s · "
        f"DDB {units['dynamodb_write_units']} WRU / {units['dynamodb_read_units']:g} RRU"
    )


Row = tuple[str, Callable[[RunModel], Any], bool]
"""(label, how to read the value from a run, whether a non-zero value is bad)."""


def _count_row(label: str, name: str, *, missing: int | str | None = None) -> Row:
    """A count's row, marked when it is one of the counts every report flags above zero.

    ``missing`` is shown when an older report lacks the count; without it the count is required.
    """

    def read(run: RunModel) -> Any:
        counts = run.counts
        return counts[name] if missing is None else counts.get(name, missing)

    return (label, read, name in FLAGGED_WHEN_NONZERO)


def _duration(us: Any) -> str:
    return "-" if us is None else format_us(us)


def _latency_row(label: str, name: str, *, optional: bool = False) -> Row:
    """``p50 / p99`` of one latency; ``optional`` for a latency older reports lack."""

    def read(run: RunModel) -> str:
        latency = run.latency_us.get(name, {}) if optional else run.latency_us[name]
        return f"{_duration(latency.get('p50'))} / {_duration(latency.get('p99'))}"

    return (f"{label} p50 / p99", read, False)


ROWS: list[Row] = [
    ("faults", lambda r: r.faults, False),
    _count_row("messages sent", "messages_sent"),
    _count_row("distinct ids", "distinct_ids"),
    _count_row("deliveries", "deliveries"),
    _count_row("redeliveries", "redeliveries"),
    ("overlapping ids (race exposure)", overlap_text, False),
    _count_row("writes accepted", "writes_accepted"),
    _count_row("writes rejected (condition)", "writes_rejected"),
    _count_row("side writes", "side_writes", missing=0),
    _count_row("no-op writes", "noop_writes", missing=0),
    _count_row("duplicate writes", "duplicate_writes"),
    _count_row("conflicting writes", "conflicting_writes"),
    _count_row("lost outcomes", "lost_outcomes"),
    _count_row("acknowledged", "acked"),
    _count_row("dead-lettered", "dead_lettered"),
    _count_row("unexpected dead letters", "unexpected_dead_letters", missing=0),
    _count_row("handler errors", "handler_errors"),
    _count_row("unsettled", "unsettled"),
    _count_row("unobserved calls", "unobserved_calls", missing=0),
    (
        "queue visible / in flight",
        lambda r: f"{r.queue_after['visible']} / {r.queue_after['in_flight']}",
        False,
    ),
    ("dlq messages", lambda r: r.queue_after["dlq"], False),
    ("table items", lambda r: r.table_after["items"], False),
    _latency_row("end-to-end", "end_to_end"),
    _latency_row("queue dwell", "queue_dwell", optional=True),
    _latency_row("handler", "handler"),
    _latency_row("write", "write"),
    ("throughput", lambda r: f"{r.throughput['messages_per_s']:.1f} msg/s", False),
    ("duration", lambda r: f"{r.throughput['duration_s']:.2f} s", False),
    ("cost per million msgs", lambda r: usd_per_million(r), False),
    ("billed units", lambda r: billed_units(r), False),
]


EFFECT_ROWS: list[Row] = [
    _count_row("effects sent", "effects_sent", missing="-"),
    _count_row("effects delivered", "effects_delivered", missing="-"),
    _count_row("duplicate effects", "duplicate_effects", missing="-"),
    _count_row("conflicting effects", "conflicting_effects", missing="-"),
    _count_row("lost effects", "lost_effects", missing="-"),
]
"""Rows a report shows after ``lost outcomes`` when a run has sinks or effects (``-`` for a
run of the report that has none)."""
EFFECT_ROWS_AFTER = "lost outcomes"


SIDE_ROW = _count_row("duplicate side writes", "duplicate_side_writes", missing="-")
"""The row a report shows after ``duplicate writes`` when a run's side writes were judged."""
SIDE_ROW_AFTER = "duplicate writes"


def _rows(runs: Sequence[RunModel]) -> list[Row]:
    rows = ROWS
    if any("duplicate_side_writes" in run.counts for run in runs):
        at = next(i for i, row in enumerate(rows) if row[0] == SIDE_ROW_AFTER) + 1
        rows = [*rows[:at], SIDE_ROW, *rows[at:]]
    if not any("effects_sent" in run.counts for run in runs):
        return rows
    at = next(i for i, row in enumerate(rows) if row[0] == EFFECT_ROWS_AFTER) + 1
    return [*rows[:at], *EFFECT_ROWS, *rows[at:]]


def effect_lines(run: RunModel) -> list[str]:
    """One line per sink of a run with sinks or effects (none for another run)."""
    return [f"effects  {sink_line(entry)}" for entry in run.effects or ()]


def _cell(value: Any, bad_if_nonzero: bool) -> Text:
    text = str(value)
    if bad_if_nonzero and isinstance(value, int):
        return Text(text, style="bold red" if value else "green")
    return Text(text)


def _verdict(run: RunModel) -> Text:
    if run.verdict == "inconclusive":
        return Text("INCONCLUSIVE", style="bold magenta")
    if run.verdict != "pass":
        return Text("FAIL", style="bold red")
    if run.relaxed_reasons:
        return Text("PASS (failure expected)", style="bold yellow")
    return Text("PASS", style="bold green")


def summary_table(report: ReportModel | Mapping[str, Any]) -> Table:
    report = as_model(report)
    runs = report.runs
    backend = report.backend
    where = backend["kind"] + (f" {backend['endpoint_url']}" if backend.get("endpoint_url") else "")
    table = Table(title=f"{report.name} · seed {report.seed} · {where}", title_justify="left")
    table.add_column("", style="bold")
    for run in runs:
        table.add_column(run.variant, justify="right")
    verdicts = [_verdict(run) for run in runs]
    table.add_row("verdict", *verdicts)
    for label, read, bad in _rows(runs):
        table.add_row(label, *(_cell(read(run), bad) for run in runs))
    return table


def _item(item: Mapping[str, Any] | None) -> str:
    if item is None:
        return "absent"
    flat = {
        k: next(iter(v.values())) if isinstance(v, dict) and len(v) == 1 else v
        for k, v in item.items()
    }
    return json.dumps(flat, sort_keys=True)


def _write_line(w: Mapping[str, Any]) -> str:
    role = w.get("role")
    if w["outcome"] != "accepted":
        return f"{w['operation']} {w['outcome']}, kept {_item(w['item_before'])}"
    if role == "first":
        if w["item_before"] is not None:
            # An aggregate's first change for this id: the item held others' already.
            return f"{w['operation']} accepted: its first change, of {_item(w['item_before'])}"
        return f"{w['operation']} accepted: stored it (was absent)"
    if role == "step":
        return f"{w['operation']} accepted: the same delivery's next step"
    if role == "noop":
        if w["item_before"] is not None and w["item_before"] == w["item_after"]:
            return f"{w['operation']} accepted: changed nothing (the item already held it)"
        return f"{w['operation']} accepted: changed nothing (if_not_exists)"
    if w["item_before"] == w["item_after"]:
        return f"{w['operation']} accepted: wrote the same order again"
    if w["item_before"] is None:
        return f"{w['operation']} accepted: stored it again"
    return f"{w['operation']} accepted: replaced {_item(w['item_before'])}"


def race_story(finding: Mapping[str, Any]) -> str:
    """The first double-written id, one line per call with when it started and ended.

    The writes keep the backend's order (as the checker found it); each read goes
    before the first write that started after it. A read listed after an accepted
    write overlapped it: it started before that write took effect.
    """
    reads = sorted(
        (
            r["at_ms"],
            r.get("done_ms", r["at_ms"]),
            r["environment"],
            "GetItem saw " + ("absent" if r["found"] is None else "the order"),
        )
        for r in finding.get("reads", [])
    )
    events: list[tuple[float, float, int, str]] = []
    for w in finding["writes"]:
        while reads and reads[0][0] <= w["at_ms"]:
            events.append(reads.pop(0))
        events.append((w["at_ms"], w.get("done_ms", w["at_ms"]), w["environment"], _write_line(w)))
    events += reads
    stored = next((w["item_after"] for w in finding["writes"] if w["item_after"]), None)
    lines = [
        f"  e.g. {finding['business_id']} {_item(stored)} was written {finding['accepted_writes']} times:"
    ]
    lines += [
        f"    {at:>9.1f} to {done:.1f} ms  env {env}  {what}" for at, done, env, what in events
    ]
    return "\n".join(lines)


HEADLINE_STYLES = {
    "bad": "bold red",
    "expected": "bold yellow",
    "inconclusive": "bold magenta",
    "ok": "bold green",
}


def finding_lines(report: ReportModel) -> list[RenderableType]:
    """What each variant wrote twice, lost or wrote in conflict, with the first witness's race.

    What the summary opens with, before the table of counts and settings.
    """
    runs = report.runs
    out: list[RenderableType] = []
    for line in headlines(runs, [run.variant for run in runs]):
        expected = " (expected by this scenario)" if line.level == "expected" else ""
        out.append(
            Text(f"{line.variant}: {line.text}{expected}", style=HEADLINE_STYLES[line.level])
        )
        if line.witness is not None:
            out.append(Text(race_story(line.witness)))
    out.append(Text(""))
    return out


def details(report: ReportModel, *, story: bool = True) -> list[RenderableType]:
    """Why each failing variant failed, with one piece of evidence, and the warnings.

    ``story=False`` leaves out the race of the first double-written id, for a
    summary that opened with it (:func:`finding_lines`).
    """
    out: list[RenderableType] = []
    for run in report.runs:
        name = run.variant
        for line in effect_lines(run):
            out.append(Text(f"  {name}: {line}"))
        for reason in run.reasons:
            out.append(Text(f"✗ {name}: {reason}", style="red"))
        for reason in run.inconclusive:
            out.append(Text(f"? {name}: inconclusive: {reason}", style="magenta"))
        for note in run.notes:
            out.append(Text(f"  {name}: {note}", style="dim"))
        for reason in run.relaxed_reasons or ():
            out.append(Text(f"~ {name}: {reason} (expected by this scenario)", style="yellow"))
        for result in run.thresholds:
            mark, style = ("✓", "green") if result.ok else ("✗", "red")
            scoped = result.expr.startswith(f"{name}:")
            label = result.expr if scoped else f"{name}: {result.expr}"
            observed = format_observed(result, run)
            out.append(Text(f"{mark} {label} (observed {observed})", style=style))
        for warning in run.warnings:
            if is_intended(warning):
                out.append(Text(f"· {name}: {warning}", style="dim"))
            else:
                out.append(Text(f"! {name}: {warning}", style="yellow"))
        findings = run.findings
        if findings and story:
            out.append(Text(race_story(findings[0])))
        for error in run.errors[:3]:
            out.append(
                Text(
                    f"  {name}: {error['count']}× {error['outcome']}: {error['error']}", style="dim"
                )
            )
        for problem in run.cleanup_problems:
            out.append(Text(f"! {name}: cleanup: {problem}", style="yellow"))
    if report.command:
        out.append(Text(f"Reproduce: {report.command}", style="dim"))
    return out


EFFECT_COLUMNS = tuple(name for name in EFFECT_COUNT_NAMES if name in FLAGGED_WHEN_NONZERO)
"""The effect counts a sweep's table shows when a run has them: those that fail a verdict."""


def sweep_table(report: ReportModel) -> Table:
    """One row per cell and variant: what a user tunes against."""
    runs = report.runs
    axes = list(dict.fromkeys(key for run in runs for key in run.cell))
    kind = "runs" if report.repeat else "sweep"
    table = Table(title=f"{report.name} {kind} · seed {report.seed}", title_justify="left")
    for axis in axes:
        table.add_column(axis, justify="right")
    # A run that sent effects (or made sinks) adds their failing counts; others keep the table.
    effects = [
        name for name in EFFECT_COLUMNS if any(run.counts.get(name) is not None for run in runs)
    ]
    for column in (
        "variant",
        "verdict",
        "deliveries",
        "redeliveries",
        "duplicate writes",
        *(name.replace("_", " ") for name in effects),
        "dead-lettered",
        "msg/s",
        "e2e p99",
        "$/M msgs",
    ):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for run in runs:
        counts = run.counts
        table.add_row(
            *(str(run.cell.get(axis, "")) for axis in axes),
            run.variant,
            _verdict(run),
            str(counts["deliveries"]),
            str(counts["redeliveries"]),
            _cell(counts["duplicate_writes"], "duplicate_writes" in FLAGGED_WHEN_NONZERO),
            *(
                "-"
                if counts.get(name) is None
                else _cell(counts[name], name in FLAGGED_WHEN_NONZERO)
                for name in effects
            ),
            str(counts["dead_lettered"]),
            f"{run.throughput['messages_per_s']:.1f}",
            _duration(run.latency_us["end_to_end"]["p99"]),
            usd_per_million(run),
        )
    return table


def render(report: ReportModel | Mapping[str, Any], metric: str | None = None) -> RenderableType:
    """The terminal summary; a sweep's grid tables start with ``metric`` (a heatmap metric name)."""
    report = as_model(report)
    if report.repeat and len(report.runs) > 1:
        from loadtest.reports.text.repeat_view import repeat_lines, repeat_table

        return Group(sweep_table(report), repeat_table(report), *repeat_lines(report))
    if any(run.cell for run in report.runs):
        from loadtest.reports.html.heatmap import grid_tables

        first = metric or report.extra.get("sweep_metric")
        return Group(*grid_tables(report, first), sweep_table(report), *details(report))
    if report.explore:
        # An explore report: what the search did and its counterexample, as explore printed it.
        from loadtest.reports.explore import explore_text

        return Text(explore_text(report))
    return Group(*finding_lines(report), summary_table(report), *details(report, story=False))
