"""The HTML report: one self-contained page rendered from the report model.

Owns ``--html`` (and ``loadtest report saved.json --html``). Pure: takes a
report model (``loadtest.reports.model``; its JSON is read into one) and returns a string; writing the file is
the CLI's job (the one file written here is Jinja's compiled template, kept in the user's
cache for the next process: ``_bytecode_cache``). The page needs no network — CSS and a little JS are inline and
every plot is an inline SVG drawn here in Python, so the same report always
gives the same bytes and the plots are testable without a browser.

All report-derived text (variant names, message bodies, handler errors) is
escaped: by jinja2's autoescape in the template, and by :func:`esc` in the
SVGs built here. Receipt handles are never in a report, and nothing here
adds them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
from jinja2.bccache import Bucket

from loadtest.model.figures.metrics import format_us
from loadtest.observer.layer import cache_root
from loadtest.reports.finding import headlines, page_warnings, witness
from loadtest.reports.html.charts import (
    PALETTE,
    Series,
    format_item,
    percentile_curve,
    step_markers,
    step_series,
    svg_step_chart,
)
from loadtest.reports.html.heatmap import html_section
from loadtest.reports.html.rows import (
    EFFECT_COLUMNS,
    count_cells,
    effect_rows,
    latency_names,
    latency_rows,
    percentile_plots,
    witness_effect_calls,
)
from loadtest.reports.html.steps import explore_timeline
from loadtest.reports.html.timeline import find_races, timeline_for
from loadtest.reports.model import ReportModel, RunModel, as_model
from loadtest.reports.text.formats import format_observed
from loadtest.reports.text.repeat_view import repeat_context

__all__ = ["percentile_curve", "render_html"]

WRITE_TABLE_PAGE_ROWS = 50
"""Rows per page of the write decisions table (all rows are shown without JS)."""


# --------------------------------------------------------------------------- the page


def _run_labels(runs: Sequence[RunModel]) -> list[str]:
    """Variant names; a sweep's repeated names get the settings that differ between cells."""
    names = [run.variant for run in runs]
    if len(set(names)) == len(names):
        return names
    settings = [run.settings for run in runs]
    keys = sorted({k for s in settings for k in s})
    varying = [k for k in keys if len({json.dumps(s.get(k), sort_keys=True) for s in settings}) > 1]
    labels = []
    for name, s in zip(names, settings, strict=True):
        extra = ", ".join(f"{k}={s.get(k)}" for k in varying)
        labels.append(f"{name} ({extra})" if extra else name)
    seen: Counter[str] = Counter()
    unique = []
    for label in labels:
        seen[label] += 1
        unique.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return unique


def _explore_bugs(explore: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The explored bugs to draw, one section each: the report's ``bugs``, else (a report
    written before they were kept) its counterexample alone."""
    bugs = explore.get("bugs")
    if bugs:
        return list(bugs)
    example = explore.get("counterexample")
    return [example] if example else []


def _reproduce_command(report: ReportModel) -> tuple[str, bool]:
    # An exploration's page shows one schedule: its replay line reruns exactly that one,
    # as the terminal's "replay:" does (the command reruns the whole search).
    replay = (report.explore or {}).get("replay")
    if replay:
        return str(replay), False
    command = report.command
    if command:
        return str(command), False
    name = report.scenario.get("name") or "SCENARIO"
    variants = list(dict.fromkeys(run.variant for run in report.runs))
    seed = report.seed
    if len(variants) > 1:
        return f"loadtest compare {name} --variants {','.join(variants)} --seed {seed}", True
    variant = f" --variant {variants[0]}" if variants else ""
    return f"loadtest run {name}{variant} --seed {seed}", True


def _write_rows(run: RunModel) -> list[dict[str, Any]]:
    rows = []
    for index, w in enumerate(run.write_decisions):
        outcome = str(w.get("outcome"))
        bid = str(w.get("business_id"))
        role = str(w.get("role", ""))
        css = "again" if role == "again" else outcome
        rows.append(
            {
                "n": index + 1,
                "at_ms": f"{float(w.get('at_ms') or 0):.1f}",
                "business_id": bid,
                "environment": w.get("environment"),
                "operation": w.get("operation"),
                "condition": w.get("condition") or "—",
                "outcome": outcome + (f" ({role})" if role and role not in (outcome, "") else ""),
                "error_code": w.get("error_code") or "",
                "css": css,
                "before": format_item(w.get("item_before"))
                + ("" if w.get("before_known", True) else " (not observed)"),
                "after": format_item(w.get("item_after")),
            }
        )
    return rows


def _cuts(report: ReportModel, labels: Sequence[str]) -> list[str]:
    """What the page lists only in part (the counts are always over everything): stated apart
    from the warnings, which are about the consumer and the run, not the report's size."""
    out = []
    for run, label in zip(report.runs, labels, strict=True):
        total = run.known("write_decisions_total")
        shown = len(run.write_decisions)
        if isinstance(total, int) and total > shown:
            out.append(f"{label}: write decisions listed for the first {shown} of {total} writes")
        for name, cut in run.cut.items():
            if name != "write_decisions" and isinstance(cut, dict) and cut.get("cut"):
                out.append(f"{label}: {name} listed for {cut['listed']} of {cut['total']}")
    return out


def _witness(run: RunModel, race_ids: Sequence[str], explored: bool) -> dict[str, Any] | None:
    """The headline's example id, linked to where the page shows it (an explored run's
    race is its counterexample's steps)."""
    found = witness(run, race_ids)
    if found is None or not explored:
        return found
    return {**found, "anchor": "explore"}


def _thresholds(run: RunModel) -> list[dict[str, Any]]:
    results = sorted(run.thresholds, key=lambda r: r.ok)  # failing first
    return [{"expr": r.expr, "observed": format_observed(r, run), "ok": r.ok} for r in results]


TEMPLATE_CACHE = "templates"
"""The folder under the user's cache (``loadtest.observer.layer.cache_root``) where the page's
compiled template is kept: compiling it costs about 0.1 s of CPU, once per process."""


class _KeptBytecode(jinja2.FileSystemBytecodeCache):
    """Jinja's own bytecode cache (a template is compiled again when its source or Jinja's
    or Python's version differs), where a cache that cannot be written only costs the
    compiling."""

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    folder = os.path.join(cache_root(), TEMPLATE_CACHE)
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return _KeptBytecode(folder)


@functools.cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("loadtest.reports", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters["us"] = format_us
    env.filters["item"] = format_item
    return env


def render_html(report: ReportModel | Mapping[str, Any]) -> str:
    """The report as one self-contained HTML page (no network needed to view it).

    Deterministic: the same report gives the same string. ``report`` is the
    report model, as built by ``loadtest.reports.report.build`` or read back
    from a saved file (a JSON report is read into one).
    """
    report = as_model(report)
    runs = report.runs
    # An explored schedule runs on the explorer's clock: its times, rates, latencies and
    # costs measure nothing, so the page shows the schedules and their steps instead.
    explored = report.explore is not None
    labels = _run_labels(runs)
    colors = [PALETTE[i % len(PALETTE)] for i in range(len(runs))]
    names = latency_names(runs)
    command, reconstructed = _reproduce_command(report)

    race_ids, raced = find_races(runs)
    races = []
    for business_id in [] if explored else race_ids:
        timelines = []
        missing = []
        for run, label in zip(runs, labels, strict=True):
            timeline = timeline_for(run, label, business_id)
            if timeline is None:
                missing.append(label)
            else:
                timelines.append(timeline)
        races.append({"business_id": business_id, "timelines": timelines, "missing": missing})
    other_findings = []
    for run, label in zip(runs, labels, strict=True):
        for f in run.findings:
            if str(f.get("business_id")) in race_ids:
                continue
            envs = sorted({str(w.get("environment")) for w in f.get("writes") or []})
            other_findings.append(
                {
                    "run": label,
                    "business_id": f.get("business_id"),
                    "accepted": f.get("accepted_writes"),
                    "environments": ", ".join(envs),
                    "reads_absent": sum(1 for r in f.get("reads") or [] if r.get("found") is None),
                }
            )

    over_time = (
        []
        if explored
        else [
            svg_step_chart(
                [
                    Series(label, color, pts, markers=step_markers(pts, "msg/s"))
                    for run, label, color in zip(runs, labels, colors, strict=True)
                    for pts in [step_series(run, "acked", per_s=True)]
                ],
                title="Throughput: messages acknowledged per second",
                y_label="messages/s",
            ),
            svg_step_chart(
                [
                    Series(label, color, pts, markers=step_markers(pts, "duplicate writes"))
                    for run, label, color in zip(runs, labels, colors, strict=True)
                    for pts in [step_series(run, "duplicate_writes", per_s=False)]
                ],
                title="Duplicate writes per interval",
                y_label="duplicate writes",
            ),
        ]
    )

    run_views = []
    for run, label, color in zip(runs, labels, colors, strict=True):
        rows = _write_rows(run)
        errors_by_text: dict[tuple[str, str], int] = defaultdict(int)
        for e in run.errors:
            errors_by_text[(str(e.get("outcome", "")), str(e.get("error", "")))] += int(
                e.get("count") or 1
            )
        run_views.append(
            {
                "run": run,
                "label": label,
                "color": color,
                "known": {k: run.known(k, "–") for k in ("cold_starts", "handler", "faults")},
                "verdict": run.verdict,
                "reasons": [*run.reasons, *(f"inconclusive: {r}" for r in run.inconclusive)],
                "notes": list(run.notes),
                "relaxed": list(run.relaxed_reasons or ()),
                "thresholds": _thresholds(run),
                "write_rows": rows,
                "write_total": run.known("write_decisions_total", len(rows)),
                "write_outcomes": run.write_outcomes,
                "effect_calls": witness_effect_calls(run),
                "errors": [
                    {"outcome": o, "error": e, "count": n}
                    for (o, e), n in sorted(errors_by_text.items(), key=lambda kv: (-kv[1], kv[0]))
                ],
                "dead_letters": list(run.dead_letters),
                "settings": run.settings,
                "throughput": run.throughput,
                "queue_after": run.queue_after,
                "table_after": run.table_after,
            }
        )

    warnings, notes = page_warnings(runs, labels)
    repeat = repeat_context(report)
    # A sweep's grid and a repeat's table tell their own story, one cell or run per row.
    many = repeat is not None or any(run.cell for run in runs)
    explored_bugs = _explore_bugs(report.explore or {})
    template = _environment().get_template("report.html.j2")
    return template.render(
        repeat=repeat,
        report=report,
        scenario=report.scenario,
        backend=report.backend,
        runs=run_views,
        command=command,
        command_reconstructed=reconstructed,
        warnings=warnings,
        notes=notes,
        headlines=[
            {
                "line": line,
                "run": view,
                "witness": _witness(run, race_ids if raced else [], explored),
            }
            for line, view, run in zip(headlines(runs, labels), run_views, runs, strict=True)
        ]
        if not many
        else [],
        cuts=_cuts(report, labels),
        explored=explored,
        count_rows=count_cells(runs, explored=explored),
        effect_rows=effect_rows(runs, labels),
        effect_columns=EFFECT_COLUMNS,
        latency_rows=[] if explored else latency_rows(runs, names),
        latency_plots=[] if explored else percentile_plots(runs, labels, names),
        over_time=over_time,
        races=races,
        raced=raced,
        other_findings=other_findings,
        page_rows=WRITE_TABLE_PAGE_ROWS,
        sweep=html_section(report, report.extra.get("sweep_metric")),
        explore_bugs=[
            {
                "example": bug,
                "timeline": explore_timeline(
                    bug.get("steps") or [],
                    title="The counterexample, step by step"
                    if n == 0
                    else f"Bug {n + 1}, step by step",
                ),
            }
            for n, bug in enumerate(explored_bugs)
        ],
    )
