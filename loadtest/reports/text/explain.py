"""Why a report failed, as plain text: what a failed assertion on a report shows.

Owns ``explanation``: the verdict of each run with the counts that made it fail,
the reasons and failed thresholds, the first counterexample exactly as the terminal
prints it (for a race, the interleaving of the reads and writes of one
double-written id), the first handler errors, and the commands that replay the run,
seed included; for an explore report, its own summary (the shrunk counterexample's
steps and the command that replays that schedule). Plain text without colour, so a test runner can show it as is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from loadtest.model.checker import BAD_WHEN_NONZERO, INCONCLUSIVE_WHEN_NONZERO
from loadtest.reports.model import ReportModel, RunModel, as_model
from loadtest.reports.text.formats import format_observed
from loadtest.reports.text.render import race_story


def failing_counts(run: RunModel) -> list[str]:
    """``name=value`` for each count that fails a run when it is not zero, and is not, in
    the checker's order (the same text on every run of the same report)."""
    counts = run.counts
    flagged = (*BAD_WHEN_NONZERO, *INCONCLUSIVE_WHEN_NONZERO)
    return [f"{name}={counts[name]}" for name in flagged if counts.get(name)]


def _run_lines(run: RunModel) -> list[str]:
    name = run.variant
    counts = ", ".join(failing_counts(run)) or "no failing counts"
    lines = [f"{name}: {run.verdict.upper()} ({counts})"]
    lines += [f"  ✗ {reason}" for reason in run.reasons]
    lines += [f"  ? inconclusive: {reason}" for reason in run.inconclusive]
    lines += [
        f"  ✗ threshold {result.expr} (observed {format_observed(result, run)})"
        for result in run.thresholds
        if not result.ok
    ]
    if run.findings:
        lines.append(race_story(run.findings[0]))
    lines += [
        f"  {error['count']}× {error['outcome']}: {error['error']}" for error in run.errors[:3]
    ]
    return lines


def explanation(report: ReportModel | Mapping[str, Any], replay: Sequence[str] = ()) -> str:
    """The text a failed ``assert_passed`` raises with.

    Passing runs get their verdict line only. ``replay`` adds lines after the
    report's own ``Reproduce:`` command (a test runner's command, for example).
    """
    report = as_model(report)
    if report.explore:
        from loadtest.reports.explore import explore_text

        # Its counterexample, step by step, and the command that replays that schedule.
        return "\n".join([explore_text(report), *replay])
    lines = [f"loadtest: {report.name} · seed {report.seed}"]
    if report.incomplete_reason:
        lines.append(f"incomplete: {report.incomplete_reason}")
    for run in report.runs:
        if run.verdict == "pass":
            lines.append(f"{run.variant}: PASS")
        else:
            lines += _run_lines(run)
    if report.command:
        lines.append(f"Reproduce: {report.command}")
    lines.extend(replay)
    return "\n".join(lines)
