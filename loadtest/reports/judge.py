"""A run's verdict after the scenario's relaxations and the thresholds.

Owns the two steps that follow the default verdict: relaxing it where the
scenario's ``[verdict.allow]`` says so (the dropped reasons stay visible in
``relaxed_reasons``; ``loadtest.model.figures.thresholds`` says which reasons an allowed
count drops), and failing it by any threshold that does not hold (an incomplete
run's is then inconclusive; an existing "fail" is kept: thresholds add to the
default verdict, never relax it). Each step takes and returns a ``RunModel``;
``relax_default_verdict`` and ``apply_thresholds`` do the same on the JSON of a
run and of a report. Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from loadtest.model.checker import verdict_of
from loadtest.model.figures.thresholds import Threshold, evaluate, relaxed_reasons
from loadtest.reports.model import ReportModel, RunModel, ThresholdResult


def relaxed(run: RunModel, allowed: Collection[str]) -> RunModel:
    """The run with the default-verdict reasons of the ``allowed`` counts dropped.

    ``allowed`` holds names from ``loadtest.model.scenario.loading.RELAXABLE`` (others raise
    ``InputError``). The verdict is then "fail" if any reason remains or any threshold
    result failed, else "pass", so this may come before or after ``judged_by``.
    """
    kept, dropped = relaxed_reasons(run.reasons, run.counts, allowed, timed_out=run.timed_out)
    return dataclasses.replace(
        run,
        reasons=tuple(kept),
        relaxed_reasons=(*(run.relaxed_reasons or ()), *dropped),
        verdict=verdict_of(
            kept,
            run.inconclusive,
            failed_thresholds=any(not t.ok for t in run.thresholds),
            incomplete=run.incomplete,
        ).value,
    )


def judged_by(run: RunModel, thresholds: Iterable[Threshold]) -> RunModel:
    """The run with the results of the thresholds that apply to it (its list replaced, so
    judging twice is judging once), and its verdict failed by any that did not hold.

    Thresholds on a repeat's statistics are judged over the runs
    (``loadtest.model.search.repeats``), never here.
    """
    figures = run.figures()
    results = tuple(
        ThresholdResult.from_json(evaluate(t, figures))
        for t in thresholds
        if t.aggregate is None and t.applies_to(run.variant)
    )
    verdict = run.verdict
    if any(not r.ok for r in results) and verdict != "fail":
        verdict = verdict_of(
            run.reasons, run.inconclusive, failed_thresholds=True, incomplete=run.incomplete
        ).value
    return dataclasses.replace(run, thresholds=results, verdict=verdict)


def relax_default_verdict(run: Mapping[str, Any], allowed: Collection[str]) -> dict[str, Any]:
    """``relaxed`` on the JSON of one run: a new run object."""
    return relaxed(RunModel.from_json(run), allowed).to_json()


def apply_thresholds(report: Mapping[str, Any], thresholds: Iterable[Threshold]) -> dict[str, Any]:
    """``judged_by`` on every run of a JSON report: a new report object."""
    chosen = list(thresholds)
    model = ReportModel.from_json(report)
    runs = tuple(judged_by(run, chosen) for run in model.runs)
    return dataclasses.replace(model, runs=runs).to_json()
